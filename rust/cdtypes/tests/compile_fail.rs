//! The bounds of every public function that lends a value to the UCX transport, checked by
//! programs that must not compile (trybuild; the expected errors are in
//! `compile_fail/*.stderr`, regenerated with `TRYBUILD=overwrite` after a compiler upgrade):
//!
//! - `send_not_sync`: `Endpoint::send` lends `&T` to whichever thread progresses the worker
//!   while it waits, which packs it through its `Pack` impl: `T: Sync`.
//! - `isend_not_send`: `Endpoint::isend` moves the value into the request, read and dropped on
//!   whichever thread progresses or frees it: `V: Send`.
//! - `isend_borrowed`: the request (and, dropped early, its endpoint) outlives the call:
//!   `V: 'static`.
//! - `send_request_not_send`: a request of a value that is not `Send` cannot cross threads.
//! - `padded_not_repr_c`, `padded_field_not_plain`, `padded_misused`: `#[cdtypes(padded)]`
//!   sends a struct's memory as it is, so the struct must be `#[repr(C)]`, not generic, aligned
//!   to at most 8, and every field an integer, a float, an array of them or a padded struct.
//!
//! The handles themselves are `Send + Sync` and requests `Send` (`handles_cross_threads`).
use cdtypes::ucx::{Context, Endpoint, Listener, RecvRequest, SendRequest, Worker};

#[test]
fn what_is_unsound_does_not_compile() {
    trybuild::TestCases::new().compile_fail("tests/compile_fail/*.rs");
}

#[test]
fn handles_cross_threads() {
    fn send_sync<T: Send + Sync>() {}
    fn send<T: Send>() {}
    send_sync::<Context>();
    send_sync::<Worker>();
    send_sync::<Listener>();
    send_sync::<Endpoint>();
    send::<SendRequest<Vec<u8>>>();
    send::<RecvRequest<String>>();
}
