// A padded struct's memory is what travels: its layout must be the C one, which both ends
// compute alike.
use cdtypes::{Pack, Unpack};

#[derive(Pack, Unpack)]
#[cdtypes(padded)]
struct Rec {
    a: i32,
    d: f64,
}

fn main() {}
