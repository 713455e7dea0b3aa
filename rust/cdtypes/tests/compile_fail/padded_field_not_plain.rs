// A padded struct's fields must be integers, floats, arrays of them or padded structs: a
// Vec's memory is a pointer, and a bool's bytes must be checked on receive.
use cdtypes::{Pack, Unpack};

#[repr(C)]
#[derive(Pack, Unpack)]
#[cdtypes(padded)]
struct WithVec {
    a: i32,
    v: Vec<u8>,
}

#[repr(C)]
#[derive(Pack, Unpack, Clone, Copy)]
#[cdtypes(padded)]
struct WithBool {
    a: i32,
    on: bool,
}

fn main() {}
