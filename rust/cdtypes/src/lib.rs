//! Send any Rust value between processes as **one message**: a frame with a header that
//! announces every length, the value's packed fields, and its large memory regions, which
//! move without a copy (libcdt, docs/FORMAT.md).
//!
//! - [`Pack`] / [`Unpack`]: Serde-like traits. Fixed-size fields go into the packed stream;
//!   a `Vec<T>` of plain data ([`PlainData`]: integers, floats, bool, char, arrays of them) is
//!   one zero-copy region, a `Vec<Vec<T>>` or `Vec<String>` many. On receive, every region's
//!   memory is allocated from the header's lengths before its bytes arrive and becomes the
//!   received `Vec` without a copy. `#[derive(Pack, Unpack)]` (feature `derive`, on by
//!   default) for structs and enums.
//! - `serde::Serde` (feature `serde`): any `Serialize` / `DeserializeOwned` value, its byte
//!   buffers as regions.
//! - [`Frame`], [`to_vec`], [`from_bytes`]: frames as bytes or as I/O slices.
//! - [`ucx`]: the UCX transport (listen/accept, connect, blocking and non-blocking send and
//!   receive with timeouts).
//! - [`TypeBuilder`] / [`Datatype`]: MPI-style derived datatypes.
//! - `mpi` (feature `mpi`): values over rsmpi communicators on libcdt's MPI protocol
//!   (docs/MPI.md), the same objects as Python's `cdtypes.mpi` and C's `cdt_mpi.h`.
//!
//! How a value moves: it is one of libcdt's custom types, so the library pulls the packed
//! stream out of it fragment by fragment, at any offset, straight into the frame head or the
//! transport's copy. A `Vec` of fixed-size values (derived structs whose fields are integers,
//! floats, bools, chars, arrays and tuples of them) is not copied into a Rust-side stream
//! first: element `i` is packed at `i * size` when the library asks for those bytes. On
//! receive, a `Vec` of such derived structs is allocated once from its length and filled, field
//! by field, as its bytes arrive (no copy of the received stream); everything else is read from
//! the stream bytes as they arrived. The frame's bytes are the same either way (the stream
//! layout of [`Pack`]: fingerprint, fields in order, a sequence as its `u64` length and its
//! elements), so frames stay compatible with the other bindings and earlier versions. Received
//! `Vec`s and regions of 4 MiB and more are marked for transparent huge pages, and
//! [`recycle`] hands a `Vec` you are done with to the next receive of that type on the thread
//! (or, for plain data and padded structs, to the next region of its size).
//! A fixed-size value's `pack_fixed` may therefore run inside the transport's progress, in the
//! thread that progresses the worker, while the send is pending (derived code only reads the
//! fields).
//!
//! **A struct as its memory**: `#[cdtypes(padded)]` on a `#[repr(C)]` struct whose fields are
//! integers, floats, arrays of them or other padded structs makes a `Vec` of it travel as its
//! memory, padding included: its length in the stream and its `len * size_of::<T>()` bytes as
//! one region, taken in place on send and, on receive, allocated with the struct's alignment
//! to become the `Vec` without a copy (between two processes of one host both cores copy it,
//! where the stream form is packed on one side and unpacked on the other). It is the Rust side
//! of C's `cdt_type_padded` (docs/ENGINE.md, Padding declared). What it costs: the padding
//! bytes travel too (whatever the sender's memory holds there), and both ends must use it (the
//! fingerprint covers the attribute and the struct's size, alignment and field offsets, so a
//! receiver of the other form, or of another layout, is refused). The derive refuses a struct
//! that is not `#[repr(C)]`, is generic, is aligned to more than 8 bytes, or has another
//! field type (a pointer, a `bool`, a `char` or an enum cannot travel as memory). A single
//! value and a fixed-size array of it still go into the stream.
//!
//! ```
//! use cdtypes::{Pack, Unpack};
//!
//! #[repr(C)]
//! #[derive(Pack, Unpack, Clone, Copy, Debug, PartialEq)]
//! #[cdtypes(padded)]
//! struct Record { a: i32, b: i32, c: i32, d: f64 } // 20 bytes of fields, 24 of memory
//!
//! let records = vec![Record { a: 1, b: 2, c: 3, d: 4.0 }; 10_000];
//! let frame = cdtypes::Frame::encode(&records).unwrap();
//! assert_eq!(frame.region_count(), 1); // 240,000 bytes, zero-copy
//! let back: Vec<Record> = cdtypes::from_bytes(&frame.to_vec().unwrap()).unwrap();
//! assert_eq!(back, records);
//! ```
//!
//! Every failure is an [`Error`] with libcdt's status code, name and message. Receiving a
//! frame as another type, or a truncated or corrupt frame, is an error, never undefined
//! behaviour: the stream starts with a type fingerprint ([`Schema`]) and every length and kind
//! is checked.
//!
//! ```
//! use cdtypes::{Pack, Unpack};
//!
//! #[derive(Pack, Unpack, Debug, PartialEq)]
//! struct Step {
//!     id: u32,
//!     field: Vec<f64>,        // one region, zero-copy
//!     names: Vec<String>,     // one region per string
//! }
//!
//! let step = Step { id: 7, field: vec![0.5; 1000], names: vec!["x".into(), "y".into()] };
//! let frame = cdtypes::Frame::encode(&step).unwrap();
//! assert_eq!(frame.region_count(), 3);
//! let back: Step = cdtypes::from_bytes(&frame.to_vec().unwrap()).unwrap();
//! assert_eq!(back, step);
//! ```
//!
//! Threads: [`Datatype`] (committed types) and the UCX handles ([`ucx::Context`],
//! [`ucx::Worker`], [`ucx::Endpoint`], [`ucx::Listener`]) are `Send + Sync`, as the C library
//! allows (cdt.h: committed types may be shared by threads; cdt_ucx.h: every transport
//! function may be called from any thread). Requests are `Send` (one owner at a time);
//! uncommitted [`TypeBuilder`]s and [`Decoder`]s are not shared. The transport reads a value
//! on whichever thread progresses the worker: [`ucx::Endpoint::send`] needs `T: Sync`,
//! [`ucx::Endpoint::isend`] moves the value (`Send + 'static`); see [`ucx`].
#![deny(missing_docs)]

mod error;
mod frame;
#[cfg(feature = "mpi")]
pub mod mpi;
mod object;
mod pack;
#[cfg(feature = "serde")]
pub mod serde;
mod types;
pub mod ucx;

pub use cdtypes_sys as sys;
pub use error::{Error, Result};
#[doc(hidden)]
pub use frame::{__from_pieces, __pack_stream_at};
pub use frame::{
    decode_typed, from_bytes, from_bytes_with_limits, to_vec, Decoder, Frame, FrameInfo, RegionInfo,
};
pub use object::Limits;
#[doc(hidden)]
pub use pack::{
    __ForPack, __ForUnpack, __PlainMemory, __Plan, __fixed_sum, __pack_field, __pack_field_window,
    __pack_padded_slice, __padded_layout_ok, __padded_layout_text, __plan_fixed_vec,
    __sequences_unpacked_on_arrival, __unpack_field, __unpack_field_into, __unpack_fixed_vec,
    __unpack_padded_vec, __unpack_vec_default,
};
pub use pack::{recycle, Pack, Packer, PlainData, Schema, Unpack, Unpacker};
pub use types::{AsType, Datatype, Kind, Order, TypeBuilder};

#[cfg(feature = "derive")]
pub use cdtypes_derive::{Pack, Unpack};

/// The crate's README (the page crates.io shows) as doc tests: its first program runs.
#[cfg(all(doctest, feature = "derive"))]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
