// What cannot be padded: a generic struct, an enum, an unknown attribute, an alignment over 8.
use cdtypes::Pack;

#[repr(C)]
#[derive(Pack)]
#[cdtypes(padded)]
struct Generic<T> {
    a: T,
}

#[repr(C)]
#[derive(Pack)]
#[cdtypes(padded)]
enum E {
    A(u32),
}

#[repr(C)]
#[derive(Pack)]
#[cdtypes(packed)]
struct Unknown {
    a: u32,
}

#[repr(C, align(16))]
#[derive(Pack)]
#[cdtypes(padded)]
struct Wide {
    a: u64,
}

fn main() {}
