// Values with interior mutability: while `send` waits, the transport packs a `Vec` of
// fixed-size values through their `Pack` impl on whichever thread progresses the worker, so
// `send` must not accept them.
use std::cell::Cell;

use cdtypes::ucx::Endpoint;
use cdtypes::{Pack, Packer};

struct Counter {
    hits: Cell<u64>,
}

impl Pack for Counter {
    fn pack<'a>(&'a self, p: &mut Packer<'a>) {
        p.write(self.hits.get());
    }
    const FIXED_SIZE: Option<usize> = Some(8);
    fn pack_fixed(&self, out: &mut [u8]) {
        out.copy_from_slice(&self.hits.get().to_ne_bytes());
    }
}

fn send_counters(ep: &Endpoint, counters: &Vec<Counter>) {
    ep.send(counters, 1, None).unwrap();
}

fn main() {}
