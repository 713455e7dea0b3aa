// A borrowed value: the request may outlive the borrow (a request dropped early is sent later),
// so `isend` must not accept it.
use cdtypes::ucx::Endpoint;

fn isend_borrowed(ep: &Endpoint) {
    let data = vec![1u8; 16];
    let _req = ep.isend(&data, 1).unwrap();
}

fn main() {}
