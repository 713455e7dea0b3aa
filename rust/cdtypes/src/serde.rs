//! The serde bridge (feature `serde`): any `Serialize` value travels as one frame, any
//! `DeserializeOwned` value is rebuilt from one.
//!
//! [`Serde<T>`] (and [`SerdeRef`] for sending a borrowed value) implement [`Pack`] and
//! [`Unpack`], so they go wherever a cdtypes value goes: [`Frame::encode`](crate::Frame),
//! [`ucx::Endpoint::send`](crate::ucx::Endpoint::send), [`ucx::Worker::recv`](crate::ucx::Worker::recv),
//! or a field of a `#[derive(Pack, Unpack)]` struct.
//!
//! ```
//! use cdtypes::serde::{Serde, SerdeRef};
//! use serde::{Deserialize, Serialize};
//!
//! #[derive(Serialize, Deserialize, Debug, PartialEq)]
//! struct Msg {
//!     id: u32,
//!     name: String,
//!     #[serde(with = "serde_bytes")]
//!     blob: Vec<u8>, // a region: the receiver's Vec is the region's memory
//! }
//!
//! let m = Msg { id: 1, name: "x".into(), blob: vec![7; 4096] };
//! let bytes = cdtypes::to_vec(&SerdeRef(&m)).unwrap();
//! let Serde(back): Serde<Msg> = cdtypes::from_bytes(&bytes).unwrap();
//! assert_eq!(back, m);
//! ```
//!
//! # What moves how
//! The serde data model is written into the packed stream in the sender's byte order, with no
//! field names (like bincode): integers and floats as their bytes, `bool` and `Option` tags as
//! one byte, enum variants as their `u32` index, sequences and maps as a `u64` count and their
//! elements, structs and tuples as their fields in order. A byte buffer (`serialize_bytes`:
//! `serde_bytes::ByteBuf`, `#[serde(with = "serde_bytes")]`) or a string of at least
//! [`REGION_MIN`] bytes becomes a **region**: on receive it lands in memory allocated from the
//! frame header and is handed to the value (`visit_byte_buf` / `visit_string`) without a copy.
//! On send it is copied once into memory the frame owns: serde's `serialize_bytes` lends a
//! slice only for the length of the call, so the frame cannot point at the value itself. For
//! zero copies on both ends, put the large buffers in `Vec<T>` fields of a
//! `#[derive(Pack, Unpack)]` struct and carry the rest as a `Serde<_>` field.
//!
//! A plain `Vec<u8>` without `serde_bytes` is a serde sequence: its bytes go into the stream.
//!
//! # Errors
//! The fingerprint is `serde` and the type's name (`std::any::type_name`), so receiving as
//! another type is `CDT_ERR_FRAME_MISMATCH`; so is a stream that ends early, an invalid `bool`,
//! `char`, UTF-8 string or variant index, or nesting deeper than [`MAX_DEPTH`]. The format is
//! not self-describing: types that need `deserialize_any` (`#[serde(untagged)]`,
//! `#[serde(flatten)]`, `serde_json::Value`) fail with `CDT_ERR_FRAME_MISMATCH` on receive. A
//! `Serialize` impl that fails makes the send fail with `CDT_ERR_INVALID_ARG` (nothing is
//! sent).
use std::fmt::Display;

use ::serde::de::{self, DeserializeOwned, DeserializeSeed, IntoDeserializer, Visitor};
use ::serde::ser::{self, Serialize};

use crate::error::{Error, Result};
use crate::pack::{Pack, Packer, Schema, Unpack, Unpacker};
use crate::types::Kind;
use cdtypes_sys as sys;

/// Byte buffers and strings of at least this many bytes travel as regions; shorter ones are
/// copied into the stream (a region costs a header entry and alignment padding).
pub const REGION_MIN: usize = 256;

/// Deepest nesting of sequences, maps, options, newtypes and enums a receive accepts (a
/// corrupt or hostile frame cannot exhaust the stack).
pub const MAX_DEPTH: usize = 256;

/// A value carried through serde: `Pack` when `T: Serialize`, `Unpack` when
/// `T: DeserializeOwned`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Serde<T>(pub T);

/// A borrowed value sent through serde; received as a [`Serde<T>`] (same fingerprint).
#[derive(Debug)]
pub struct SerdeRef<'v, T: ?Sized>(pub &'v T);

impl<T: ?Sized> Clone for SerdeRef<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T: ?Sized> Copy for SerdeRef<'_, T> {}

fn describe<T: ?Sized>(s: &mut Schema) {
    s.push("serde");
    s.push(std::any::type_name::<T>());
}

fn pack_serialize<T: Serialize + ?Sized>(value: &T, p: &mut Packer<'_>) {
    let mut enc = Enc { p };
    if let Err(e) = value.serialize(&mut enc) {
        enc.p.fail(e);
    }
}

impl<T: Serialize> Pack for Serde<T> {
    fn pack<'a>(&'a self, p: &mut Packer<'a>) {
        pack_serialize(&self.0, p)
    }
    fn describe(s: &mut Schema) {
        describe::<T>(s)
    }
}

impl<T: Serialize + ?Sized> Pack for SerdeRef<'_, T> {
    fn pack<'a>(&'a self, p: &mut Packer<'a>) {
        pack_serialize(self.0, p)
    }
    fn describe(s: &mut Schema) {
        describe::<T>(s)
    }
}

impl<T: DeserializeOwned> Unpack for Serde<T> {
    fn unpack(u: &mut Unpacker) -> Result<Self> {
        let mut dec = Dec { u, depth: 0 };
        T::deserialize(&mut dec).map(Serde)
    }
    fn describe(s: &mut Schema) {
        describe::<T>(s)
    }
}

/// Encode a `Serialize` value into one frame (as [`SerdeRef`]).
pub fn to_vec<T: Serialize + ?Sized>(value: &T) -> Result<Vec<u8>> {
    crate::to_vec(&SerdeRef(value))
}

/// Rebuild a `DeserializeOwned` value from a frame written by [`to_vec`] (or a [`Serde`] /
/// [`SerdeRef`] send).
pub fn from_bytes<T: DeserializeOwned>(bytes: &[u8]) -> Result<T> {
    crate::from_bytes::<Serde<T>>(bytes).map(|s| s.0)
}

impl ser::Error for Error {
    fn custom<M: Display>(msg: M) -> Self {
        Error::with_detail(sys::CDT_ERR_INVALID_ARG, format!("serialize: {msg}"))
    }
}

impl de::Error for Error {
    fn custom<M: Display>(msg: M) -> Self {
        Error::mismatch(format!("deserialize: {msg}"))
    }
}

fn ser_error(msg: &str) -> Error {
    <Error as ser::Error>::custom(msg)
}

fn de_error(msg: impl Display) -> Error {
    <Error as de::Error>::custom(msg)
}

// ---------------------------------------------------------------------------------------------
// send side

struct Enc<'p, 'a> {
    p: &'p mut Packer<'a>,
}

impl Enc<'_, '_> {
    /// A byte buffer or string: `u64` header (length << 1 | in a region), then the bytes
    /// in the stream or one region.
    fn blob(&mut self, bytes: &[u8], kind: Kind) {
        let len = bytes.len() as u64;
        if bytes.len() >= REGION_MIN {
            self.p.write((len << 1) | 1);
            self.p.region_owned(bytes.to_vec(), kind);
        } else {
            self.p.write(len << 1);
            self.p.write_bytes(bytes);
        }
    }

    fn variant(&mut self, index: u32) {
        self.p.write(index);
    }
}

/// A sequence or map being written; the count is patched when the length was not given.
struct Compound<'e, 'p, 'a> {
    enc: &'e mut Enc<'p, 'a>,
    // (offset of the count in the stream, elements written) when the length was unknown
    patch: Option<(usize, u64)>,
}

impl Compound<'_, '_, '_> {
    fn element(&mut self) {
        if let Some((_, n)) = &mut self.patch {
            *n += 1;
        }
    }
    fn finish(self) {
        if let Some((offset, n)) = self.patch {
            self.enc.p.patch(offset, &n.to_ne_bytes());
        }
    }
}

impl<'p, 'a> Enc<'p, 'a> {
    fn compound<'e>(&'e mut self, len: Option<usize>) -> Compound<'e, 'p, 'a> {
        let patch = match len {
            Some(n) => {
                self.p.write_len(n);
                None
            }
            None => {
                let offset = self.p.inline_len();
                self.p.write(0u64);
                Some((offset, 0))
            }
        };
        Compound { enc: self, patch }
    }

    fn fields<'e>(&'e mut self) -> Compound<'e, 'p, 'a> {
        Compound {
            enc: self,
            patch: None,
        }
    }
}

impl<'e, 'p, 'a> ser::Serializer for &'e mut Enc<'p, 'a> {
    type Ok = ();
    type Error = Error;
    type SerializeSeq = Compound<'e, 'p, 'a>;
    type SerializeTuple = Compound<'e, 'p, 'a>;
    type SerializeTupleStruct = Compound<'e, 'p, 'a>;
    type SerializeTupleVariant = Compound<'e, 'p, 'a>;
    type SerializeMap = Compound<'e, 'p, 'a>;
    type SerializeStruct = Compound<'e, 'p, 'a>;
    type SerializeStructVariant = Compound<'e, 'p, 'a>;

    fn is_human_readable(&self) -> bool {
        false
    }

    fn serialize_bool(self, v: bool) -> Result<()> {
        self.p.write(v);
        Ok(())
    }
    fn serialize_i8(self, v: i8) -> Result<()> {
        self.p.write(v);
        Ok(())
    }
    fn serialize_i16(self, v: i16) -> Result<()> {
        self.p.write(v);
        Ok(())
    }
    fn serialize_i32(self, v: i32) -> Result<()> {
        self.p.write(v);
        Ok(())
    }
    fn serialize_i64(self, v: i64) -> Result<()> {
        self.p.write(v);
        Ok(())
    }
    fn serialize_i128(self, v: i128) -> Result<()> {
        self.p.write_bytes(&v.to_ne_bytes());
        Ok(())
    }
    fn serialize_u8(self, v: u8) -> Result<()> {
        self.p.write(v);
        Ok(())
    }
    fn serialize_u16(self, v: u16) -> Result<()> {
        self.p.write(v);
        Ok(())
    }
    fn serialize_u32(self, v: u32) -> Result<()> {
        self.p.write(v);
        Ok(())
    }
    fn serialize_u64(self, v: u64) -> Result<()> {
        self.p.write(v);
        Ok(())
    }
    fn serialize_u128(self, v: u128) -> Result<()> {
        self.p.write_bytes(&v.to_ne_bytes());
        Ok(())
    }
    fn serialize_f32(self, v: f32) -> Result<()> {
        self.p.write(v);
        Ok(())
    }
    fn serialize_f64(self, v: f64) -> Result<()> {
        self.p.write(v);
        Ok(())
    }
    fn serialize_char(self, v: char) -> Result<()> {
        self.p.write(v);
        Ok(())
    }
    fn serialize_str(self, v: &str) -> Result<()> {
        self.blob(v.as_bytes(), Kind::Char);
        Ok(())
    }
    fn serialize_bytes(self, v: &[u8]) -> Result<()> {
        self.blob(v, Kind::Byte);
        Ok(())
    }
    fn serialize_none(self) -> Result<()> {
        self.p.write(0u8);
        Ok(())
    }
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<()> {
        self.p.write(1u8);
        value.serialize(self)
    }
    fn serialize_unit(self) -> Result<()> {
        Ok(())
    }
    fn serialize_unit_struct(self, _name: &'static str) -> Result<()> {
        Ok(())
    }
    fn serialize_unit_variant(
        self,
        _name: &'static str,
        index: u32,
        _v: &'static str,
    ) -> Result<()> {
        self.variant(index);
        Ok(())
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        value: &T,
    ) -> Result<()> {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        index: u32,
        _variant: &'static str,
        value: &T,
    ) -> Result<()> {
        self.variant(index);
        value.serialize(self)
    }
    fn serialize_seq(self, len: Option<usize>) -> Result<Self::SerializeSeq> {
        Ok(self.compound(len))
    }
    fn serialize_tuple(self, _len: usize) -> Result<Self::SerializeTuple> {
        Ok(self.fields())
    }
    fn serialize_tuple_struct(
        self,
        _name: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeTupleStruct> {
        Ok(self.fields())
    }
    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        index: u32,
        _variant: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeTupleVariant> {
        self.variant(index);
        Ok(self.fields())
    }
    fn serialize_map(self, len: Option<usize>) -> Result<Self::SerializeMap> {
        Ok(self.compound(len))
    }
    fn serialize_struct(self, _name: &'static str, _len: usize) -> Result<Self::SerializeStruct> {
        Ok(self.fields())
    }
    fn serialize_struct_variant(
        self,
        _name: &'static str,
        index: u32,
        _variant: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeStructVariant> {
        self.variant(index);
        Ok(self.fields())
    }
}

impl ser::SerializeSeq for Compound<'_, '_, '_> {
    type Ok = ();
    type Error = Error;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<()> {
        self.element();
        value.serialize(&mut *self.enc)
    }
    fn end(self) -> Result<()> {
        self.finish();
        Ok(())
    }
}

impl ser::SerializeTuple for Compound<'_, '_, '_> {
    type Ok = ();
    type Error = Error;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<()> {
        value.serialize(&mut *self.enc)
    }
    fn end(self) -> Result<()> {
        Ok(())
    }
}

impl ser::SerializeTupleStruct for Compound<'_, '_, '_> {
    type Ok = ();
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<()> {
        value.serialize(&mut *self.enc)
    }
    fn end(self) -> Result<()> {
        Ok(())
    }
}

impl ser::SerializeTupleVariant for Compound<'_, '_, '_> {
    type Ok = ();
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<()> {
        value.serialize(&mut *self.enc)
    }
    fn end(self) -> Result<()> {
        Ok(())
    }
}

impl ser::SerializeMap for Compound<'_, '_, '_> {
    type Ok = ();
    type Error = Error;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<()> {
        self.element();
        key.serialize(&mut *self.enc)
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<()> {
        value.serialize(&mut *self.enc)
    }
    fn end(self) -> Result<()> {
        self.finish();
        Ok(())
    }
}

impl ser::SerializeStruct for Compound<'_, '_, '_> {
    type Ok = ();
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, _key: &'static str, v: &T) -> Result<()> {
        v.serialize(&mut *self.enc)
    }
    fn skip_field(&mut self, key: &'static str) -> Result<()> {
        // the receiver reads fields by position: a skipped field would shift the others
        Err(ser_error(&format!(
            "field `{key}` is skipped when serializing (skip_serializing_if) in a format \
             without field names"
        )))
    }
    fn end(self) -> Result<()> {
        Ok(())
    }
}

impl ser::SerializeStructVariant for Compound<'_, '_, '_> {
    type Ok = ();
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, _key: &'static str, v: &T) -> Result<()> {
        v.serialize(&mut *self.enc)
    }
    fn skip_field(&mut self, key: &'static str) -> Result<()> {
        ser::SerializeStruct::skip_field(self, key)
    }
    fn end(self) -> Result<()> {
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------
// receive side

struct Dec<'u> {
    u: &'u mut Unpacker,
    depth: usize,
}

impl Dec<'_> {
    fn enter(&mut self) -> Result<()> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(de_error(format_args!("nesting deeper than {MAX_DEPTH}")));
        }
        Ok(())
    }

    fn leave(&mut self) {
        self.depth -= 1;
    }

    /// What [`Enc::blob`] wrote: the bytes in the stream (borrowed) or a region (owned).
    fn blob(&mut self, kind: Kind) -> Result<Blob<'_>> {
        let head: u64 = self.u.read()?;
        let len = usize::try_from(head >> 1).map_err(|_| de_error("length does not fit usize"))?;
        if head & 1 == 0 {
            return self.u.read_bytes(len).map(Blob::Stream);
        }
        let v: Vec<u8> = self.u.region_of_kind(kind)?;
        if v.len() != len {
            return Err(de_error(format_args!(
                "a region of {} bytes where the stream announced {len}",
                v.len()
            )));
        }
        Ok(Blob::Region(v))
    }

    fn with_depth<R>(&mut self, f: impl FnOnce(&mut Self) -> Result<R>) -> Result<R> {
        self.enter()?;
        let r = f(self);
        self.leave();
        r
    }
}

enum Blob<'s> {
    Stream(&'s [u8]),
    Region(Vec<u8>),
}

macro_rules! de_plain {
    ($($method:ident => $visit:ident($t:ty);)*) => {$(
        fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
            let v: $t = self.u.read()?;
            visitor.$visit(v)
        }
    )*};
}

impl<'de> de::Deserializer<'de> for &mut Dec<'_> {
    type Error = Error;

    fn is_human_readable(&self) -> bool {
        false
    }

    fn deserialize_any<V: Visitor<'de>>(self, _visitor: V) -> Result<V::Value> {
        Err(de_error(
            "the format is not self-describing: a type that needs deserialize_any \
             (untagged enums, flatten, dynamic values) cannot be received",
        ))
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        self.deserialize_any(visitor)
    }

    de_plain! {
        deserialize_bool => visit_bool(bool);
        deserialize_i8 => visit_i8(i8);
        deserialize_i16 => visit_i16(i16);
        deserialize_i32 => visit_i32(i32);
        deserialize_i64 => visit_i64(i64);
        deserialize_u8 => visit_u8(u8);
        deserialize_u16 => visit_u16(u16);
        deserialize_u32 => visit_u32(u32);
        deserialize_u64 => visit_u64(u64);
        deserialize_f32 => visit_f32(f32);
        deserialize_f64 => visit_f64(f64);
        deserialize_char => visit_char(char);
        deserialize_identifier => visit_u32(u32);
    }

    fn deserialize_i128<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        let b = self.u.read_bytes(16)?;
        visitor.visit_i128(i128::from_ne_bytes(b.try_into().expect("16 bytes")))
    }

    fn deserialize_u128<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        let b = self.u.read_bytes(16)?;
        visitor.visit_u128(u128::from_ne_bytes(b.try_into().expect("16 bytes")))
    }

    fn deserialize_str<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        match self.blob(Kind::Char)? {
            Blob::Stream(b) => {
                let s = std::str::from_utf8(b).map_err(|_| de_error("a string is not UTF-8"))?;
                visitor.visit_str(s)
            }
            Blob::Region(v) => {
                let s = String::from_utf8(v).map_err(|_| de_error("a string is not UTF-8"))?;
                visitor.visit_string(s)
            }
        }
    }

    fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        self.deserialize_str(visitor)
    }

    fn deserialize_bytes<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        match self.blob(Kind::Byte)? {
            Blob::Stream(b) => visitor.visit_bytes(b),
            Blob::Region(v) => visitor.visit_byte_buf(v),
        }
    }

    fn deserialize_byte_buf<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        self.deserialize_bytes(visitor)
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        match self.u.read::<u8>()? {
            0 => visitor.visit_none(),
            1 => self.with_depth(|d| visitor.visit_some(d)),
            t => Err(de_error(format_args!("Option tag {t}"))),
        }
    }

    fn deserialize_unit<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        visitor.visit_unit()
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value> {
        visitor.visit_unit()
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value> {
        self.with_depth(|d| visitor.visit_newtype_struct(d))
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        let n = self.u.read_count()?;
        self.with_depth(|d| visitor.visit_seq(Access { dec: d, left: n }))
    }

    fn deserialize_tuple<V: Visitor<'de>>(self, len: usize, visitor: V) -> Result<V::Value> {
        self.with_depth(|d| visitor.visit_seq(Access { dec: d, left: len }))
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        len: usize,
        visitor: V,
    ) -> Result<V::Value> {
        self.deserialize_tuple(len, visitor)
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        let n = self.u.read_count()?;
        self.with_depth(|d| visitor.visit_map(Access { dec: d, left: n }))
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value> {
        self.deserialize_tuple(fields.len(), visitor)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value> {
        self.with_depth(|d| visitor.visit_enum(d))
    }
}

/// Elements of a sequence, map, tuple or struct: exactly `left` more.
struct Access<'d, 'u> {
    dec: &'d mut Dec<'u>,
    left: usize,
}

impl<'de> de::SeqAccess<'de> for Access<'_, '_> {
    type Error = Error;
    fn next_element_seed<S: DeserializeSeed<'de>>(&mut self, seed: S) -> Result<Option<S::Value>> {
        if self.left == 0 {
            return Ok(None);
        }
        self.left -= 1;
        seed.deserialize(&mut *self.dec).map(Some)
    }
    fn size_hint(&self) -> Option<usize> {
        // a hint serde uses to reserve: no more than the bytes and regions left could hold
        Some(
            self.left
                .min(self.dec.u.remaining() + self.dec.u.remaining_regions()),
        )
    }
}

impl<'de> de::MapAccess<'de> for Access<'_, '_> {
    type Error = Error;
    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>> {
        if self.left == 0 {
            return Ok(None);
        }
        self.left -= 1;
        seed.deserialize(&mut *self.dec).map(Some)
    }
    fn next_value_seed<S: DeserializeSeed<'de>>(&mut self, seed: S) -> Result<S::Value> {
        seed.deserialize(&mut *self.dec)
    }
    fn size_hint(&self) -> Option<usize> {
        Some(
            self.left
                .min(self.dec.u.remaining() + self.dec.u.remaining_regions()),
        )
    }
}

impl<'de> de::EnumAccess<'de> for &mut Dec<'_> {
    type Error = Error;
    type Variant = Self;
    fn variant_seed<S: DeserializeSeed<'de>>(self, seed: S) -> Result<(S::Value, Self)> {
        let index: u32 = self.u.read()?;
        let v = seed.deserialize(IntoDeserializer::<Error>::into_deserializer(index))?;
        Ok((v, self))
    }
}

impl<'de> de::VariantAccess<'de> for &mut Dec<'_> {
    type Error = Error;
    fn unit_variant(self) -> Result<()> {
        Ok(())
    }
    fn newtype_variant_seed<S: DeserializeSeed<'de>>(self, seed: S) -> Result<S::Value> {
        seed.deserialize(self)
    }
    fn tuple_variant<V: Visitor<'de>>(self, len: usize, visitor: V) -> Result<V::Value> {
        de::Deserializer::deserialize_tuple(self, len, visitor)
    }
    fn struct_variant<V: Visitor<'de>>(
        self,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value> {
        de::Deserializer::deserialize_tuple(self, fields.len(), visitor)
    }
}
