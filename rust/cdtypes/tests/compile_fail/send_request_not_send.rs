// A request of a value that is not `Send` (were one made) must not move to another thread.
use std::rc::Rc;

use cdtypes::ucx::SendRequest;

fn move_to_thread(req: SendRequest<Rc<u8>>) {
    std::thread::spawn(move || drop(req));
}

fn main() {}
