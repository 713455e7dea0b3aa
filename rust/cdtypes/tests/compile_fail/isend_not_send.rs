// A value that must stay on its thread: the request hands it to whichever thread progresses
// the worker, so `isend` must not accept it.
use std::rc::Rc;

use cdtypes::ucx::Endpoint;
use cdtypes::{Pack, Packer};

struct Shared(Rc<Vec<u8>>);

impl Pack for Shared {
    fn pack<'a>(&'a self, p: &mut Packer<'a>) {
        p.region(&self.0[..]);
    }
}

fn isend_shared(ep: &Endpoint, v: Shared) {
    let _req = ep.isend(v, 1).unwrap();
}

fn main() {}
