//! The Serde-like traits: a value describes itself to a [`Packer`] (fixed-size fields go into
//! the packed stream, slices of plain data become zero-copy regions) and is rebuilt from an
//! [`Unpacker`], whose regions were allocated from the frame header's lengths before their
//! bytes arrived and become the received `Vec`s without a copy.
//!
//! Stream layout (all integers in the sender's byte order, which the frame records): an 8-byte
//! type fingerprint ([`Schema`]), then the fields in declaration order; a sequence is its length
//! as `u64` followed by its elements, except a sequence of [`PlainData`] (and `String`), which
//! is one region and nothing in the stream.
//!
//! Files by job: `traits` (the traits), `schema` (fingerprints), `packer` and `unpacker`
//! (where values write and read themselves), `plan` and `sequences` (receives that unpack on
//! arrival), `memory` (recycled and spare memory, huge pages), `derived` (helpers of derived
//! code), `padded` (`Vec`s of `#[cdtypes(padded)]` structs as their memory), and the impls for
//! std types: `primitives`, `arrays_tuples`, `containers`.
mod arrays_tuples;
mod containers;
mod derived;
mod memory;
mod packer;
mod padded;
mod plan;
mod primitives;
mod schema;
mod sequences;
mod traits;
mod unpacker;

pub use derived::{
    __fixed_sum, __pack_field, __pack_field_window, __unpack_field, __unpack_field_into,
};
pub use memory::recycle;
pub(crate) use memory::{give_buffer, take_buffer};
pub(crate) use packer::Deferred;
pub use packer::Packer;
pub use padded::{
    __ForPack, __ForUnpack, __PlainMemory, __pack_padded_slice, __padded_layout_ok,
    __padded_layout_text, __unpack_padded_vec,
};
pub use plan::__Plan;
pub(crate) use plan::{Plan, PlanItem};
pub use schema::Schema;
pub(crate) use sequences::SeqSink;
pub use sequences::{
    __plan_fixed_vec, __sequences_unpacked_on_arrival, __unpack_fixed_vec, __unpack_vec_default,
};
pub use traits::{Pack, PlainData, Unpack};
pub(crate) use unpacker::RegionBuf;
pub use unpacker::Unpacker;
