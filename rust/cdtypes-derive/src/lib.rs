//! `#[derive(Pack, Unpack)]` for the `cdtypes` crate (re-exported there under the `derive`
//! feature).
//!
//! Structs pack their fields in declaration order; enums pack the variant index as `u32` and
//! then the variant's fields. The type fingerprint covers the type's name, its field (and
//! variant) names, the field types as written, and the fingerprints of its type parameters.
//!
//! `#[cdtypes(padded)]` on a `#[repr(C)]` struct (no generics, every field an integer, a
//! float, an array of them or another padded struct, aligned to at most 8) makes a `Vec` of it
//! travel as its memory, padding included, as one region; its fingerprint then also covers its
//! size, alignment and field offsets.
#![deny(missing_docs)]

use proc_macro::TokenStream;
use proc_macro2::{Span, TokenStream as Tokens};
use quote::{format_ident, quote, ToTokens};
use syn::{parse_macro_input, parse_quote, Data, DeriveInput, Fields, GenericParam, Ident, Index};

/// Derive `cdtypes::Pack`.
#[proc_macro_derive(Pack, attributes(cdtypes))]
pub fn derive_pack(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    expand(input, true)
        .unwrap_or_else(|e| e.to_compile_error())
        .into()
}

/// Derive `cdtypes::Unpack`.
#[proc_macro_derive(Unpack, attributes(cdtypes))]
pub fn derive_unpack(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    expand(input, false)
        .unwrap_or_else(|e| e.to_compile_error())
        .into()
}

/// The text the fingerprint hashes for the fields of a struct or variant.
fn fields_text(fields: &Fields) -> String {
    match fields {
        Fields::Named(f) => {
            let parts: Vec<String> = f
                .named
                .iter()
                .map(|f| {
                    format!(
                        "{}:{}",
                        f.ident.as_ref().unwrap(),
                        f.ty.to_token_stream().to_string().replace(' ', "")
                    )
                })
                .collect();
            format!("{{{}}}", parts.join(","))
        }
        Fields::Unnamed(f) => {
            let parts: Vec<String> = f
                .unnamed
                .iter()
                .map(|f| f.ty.to_token_stream().to_string().replace(' ', ""))
                .collect();
            format!("({})", parts.join(","))
        }
        Fields::Unit => String::new(),
    }
}

fn expand(mut input: DeriveInput, pack: bool) -> syn::Result<Tokens> {
    let padded = padded_attribute(&input)?;
    let name = &input.ident;
    let trait_path: syn::Path = if pack {
        parse_quote!(::cdtypes::Pack)
    } else {
        parse_quote!(::cdtypes::Unpack)
    };
    // every type parameter gets the trait as a bound
    let type_params: Vec<Ident> = input
        .generics
        .params
        .iter()
        .filter_map(|p| match p {
            GenericParam::Type(t) => Some(t.ident.clone()),
            _ => None,
        })
        .collect();
    for p in input.generics.params.iter_mut() {
        if let GenericParam::Type(t) = p {
            t.bounds.push(parse_quote!(#trait_path));
        }
    }
    let (impl_g, ty_g, where_g) = input.generics.split_for_impl();

    let mut text = String::new();
    let body;
    // structs: the fixed-size form (FIXED_SIZE, pack_fixed / unpack_fixed) when every field
    // has one, so that a Vec of them is one block of the stream
    let mut fixed = quote!();
    match &input.data {
        Data::Struct(s) => {
            text.push_str(&format!("struct {name}{}", fields_text(&s.fields)));
            let tys: Vec<&syn::Type> = s.fields.iter().map(|f| &f.ty).collect();
            fixed = if pack {
                let accesses: Vec<Tokens> = s
                    .fields
                    .iter()
                    .enumerate()
                    .map(|(i, f)| match &f.ident {
                        Some(id) => quote!(self.#id),
                        None => {
                            let idx = Index::from(i);
                            quote!(self.#idx)
                        }
                    })
                    .collect();
                let accesses2 = &accesses;
                let slice = if padded {
                    quote!(
                        #[doc(hidden)]
                        fn pack_slice<'cdt_a>(
                            items: &'cdt_a [Self],
                            p: &mut ::cdtypes::Packer<'cdt_a>,
                        ) {
                            ::cdtypes::__pack_padded_slice(items, p)
                        }
                    )
                } else {
                    quote!()
                };
                quote!(
                    #slice
                    #[doc(hidden)]
                    const FIXED_SIZE: ::std::option::Option<usize> =
                        ::cdtypes::__fixed_sum(&[#(<#tys as ::cdtypes::Pack>::FIXED_SIZE),*]);
                    #[doc(hidden)]
                    #[allow(unused_variables, unused_mut)]
                    #[inline]
                    fn pack_fixed(&self, out: &mut [u8]) {
                        let mut at = 0usize;
                        #(::cdtypes::__pack_field(&#accesses, out, &mut at);)*
                    }
                    #[doc(hidden)]
                    #[allow(unused_variables, unused_mut)]
                    #[inline]
                    fn pack_fixed_window(&self, skip: usize, out: &mut [u8]) {
                        let mut at = 0usize;
                        #(::cdtypes::__pack_field_window(&#accesses2, skip, out, &mut at);)*
                    }
                )
            } else {
                let read =
                    |ty: &syn::Type| quote!(::cdtypes::__unpack_field::<#ty>(bytes, &mut at)?);
                let build = match &s.fields {
                    Fields::Named(f) => {
                        let names = f.named.iter().map(|f| f.ident.as_ref().unwrap());
                        let reads = f.named.iter().map(|f| read(&f.ty));
                        quote!(#name { #(#names: #reads),* })
                    }
                    Fields::Unnamed(f) => {
                        let reads = f.unnamed.iter().map(|f| read(&f.ty));
                        quote!(#name(#(#reads),*))
                    }
                    Fields::Unit => quote!(#name),
                };
                // a Vec of a fixed-size struct is unpacked into the receiving Vec as its bytes
                // arrive (the type must be 'static for that: structs without generics)
                let vec_on_arrival = if padded {
                    // the length in the stream, the memory one region (no element unpacked)
                    quote!(
                        #[doc(hidden)]
                        fn vec_plan(p: &mut ::cdtypes::__Plan) {
                            p.fixed(8)
                        }
                        #[doc(hidden)]
                        fn unpack_vec(
                            u: &mut ::cdtypes::Unpacker,
                        ) -> ::cdtypes::Result<::std::vec::Vec<Self>> {
                            ::cdtypes::__unpack_padded_vec::<Self>(u)
                        }
                    )
                } else if input.generics.params.is_empty() {
                    quote!(
                        #[doc(hidden)]
                        fn vec_plan(p: &mut ::cdtypes::__Plan) {
                            ::cdtypes::__plan_fixed_vec::<Self>(p)
                        }
                        #[doc(hidden)]
                        fn unpack_vec(
                            u: &mut ::cdtypes::Unpacker,
                        ) -> ::cdtypes::Result<::std::vec::Vec<Self>> {
                            ::cdtypes::__unpack_fixed_vec::<Self>(u)
                        }
                    )
                } else {
                    quote!()
                };
                // each field written where it lives in *dst (no move of a large value)
                let into = s.fields.iter().enumerate().map(|(i, f)| {
                    let ty = &f.ty;
                    let place = match &f.ident {
                        Some(id) => quote!((*dst).#id),
                        None => {
                            let idx = Index::from(i);
                            quote!((*dst).#idx)
                        }
                    };
                    quote!(::cdtypes::__unpack_field_into::<#ty>(
                        bytes,
                        &mut at,
                        ::std::ptr::addr_of_mut!(#place),
                    )?;)
                });
                quote!(
                    #[doc(hidden)]
                    #[allow(unused_variables, unused_mut, unused_unsafe)]
                    #[inline]
                    unsafe fn unpack_fixed_into(
                        bytes: &[u8],
                        dst: *mut Self,
                    ) -> ::cdtypes::Result<()> {
                        let mut at = 0usize;
                        // SAFETY: dst is valid for a write of Self (the caller's contract), so
                        // each field's place is valid for a write of the field
                        unsafe {
                            #(#into)*
                        }
                        ::std::result::Result::Ok(())
                    }
                    #[doc(hidden)]
                    fn plan(p: &mut ::cdtypes::__Plan) {
                        #(<#tys as ::cdtypes::Unpack>::plan(p);)*
                    }
                    #vec_on_arrival
                    #[doc(hidden)]
                    const FIXED_SIZE: ::std::option::Option<usize> =
                        ::cdtypes::__fixed_sum(&[#(<#tys as ::cdtypes::Unpack>::FIXED_SIZE),*]);
                    #[doc(hidden)]
                    const ANY_BYTES: bool = true #(&& <#tys as ::cdtypes::Unpack>::ANY_BYTES)*;
                    #[doc(hidden)]
                    #[allow(unused_variables, unused_mut)]
                    #[inline]
                    fn unpack_fixed(bytes: &[u8]) -> ::cdtypes::Result<Self> {
                        let mut at = 0usize;
                        ::std::result::Result::Ok(#build)
                    }
                )
            };
            body = if pack {
                let writes = s.fields.iter().enumerate().map(|(i, f)| {
                    let access = match &f.ident {
                        Some(id) => quote!(self.#id),
                        None => {
                            let idx = Index::from(i);
                            quote!(self.#idx)
                        }
                    };
                    quote!(::cdtypes::Pack::pack(&#access, p);)
                });
                quote!(#(#writes)*)
            } else {
                let build = construct(quote!(#name), &s.fields);
                quote!(::std::result::Result::Ok(#build))
            };
        }
        Data::Enum(e) => {
            text.push_str(&format!("enum {name}{{"));
            for v in &e.variants {
                text.push_str(&format!("{}{};", v.ident, fields_text(&v.fields)));
            }
            text.push('}');
            if pack {
                let arms = e.variants.iter().enumerate().map(|(i, v)| {
                    let vname = &v.ident;
                    let idx = i as u32;
                    let binds: Vec<Ident> = (0..v.fields.len())
                        .map(|j| format_ident!("__f{}", j))
                        .collect();
                    let pattern = match &v.fields {
                        Fields::Named(f) => {
                            let names = f.named.iter().map(|f| f.ident.as_ref().unwrap());
                            quote!(#name::#vname { #(#names: #binds),* })
                        }
                        Fields::Unnamed(_) => quote!(#name::#vname(#(#binds),*)),
                        Fields::Unit => quote!(#name::#vname),
                    };
                    quote!(#pattern => {
                        p.write(#idx);
                        #(::cdtypes::Pack::pack(#binds, p);)*
                    })
                });
                body = if e.variants.is_empty() {
                    quote!(match *self {})
                } else {
                    quote!(match self { #(#arms)* })
                };
            } else {
                let arms = e.variants.iter().enumerate().map(|(i, v)| {
                    let vname = &v.ident;
                    let idx = i as u32;
                    let build = construct(quote!(#name::#vname), &v.fields);
                    quote!(#idx => ::std::result::Result::Ok(#build),)
                });
                let msg = format!("variant index {{}} of enum {name}");
                body = quote!(
                    let __tag: u32 = u.read()?;
                    match __tag {
                        #(#arms)*
                        t => ::std::result::Result::Err(::cdtypes::Error::with_detail(
                            ::cdtypes::sys::CDT_ERR_FRAME_MISMATCH,
                            ::std::format!(#msg, t),
                        )),
                    }
                );
            }
        }
        Data::Union(_) => {
            return Err(syn::Error::new(
                Span::call_site(),
                "cdtypes: unions cannot derive Pack or Unpack",
            ))
        }
    }
    let (layout, memory) = if padded {
        padded_parts(&input, pack)?
    } else {
        (quote!(), quote!())
    };
    let describe = quote!(
        fn describe(s: &mut ::cdtypes::Schema) {
            s.push(#text);
            #layout
            #(<#type_params as #trait_path>::describe(s);)*
        }
    );
    Ok(if pack {
        quote!(
            impl #impl_g ::cdtypes::Pack for #name #ty_g #where_g {
                #[allow(unused_variables)]
                fn pack<'cdt_a>(&'cdt_a self, p: &mut ::cdtypes::Packer<'cdt_a>) {
                    #body
                }
                #describe
                #fixed
            }
            #memory
        )
    } else {
        quote!(
            impl #impl_g ::cdtypes::Unpack for #name #ty_g #where_g {
                #[allow(unused_variables)]
                fn unpack(u: &mut ::cdtypes::Unpacker) -> ::cdtypes::Result<Self> {
                    #body
                }
                #describe
                #fixed
            }
            #memory
        )
    })
}

/// Whether the item says `#[cdtypes(padded)]` (the only `cdtypes` attribute); refuses others.
fn padded_attribute(input: &DeriveInput) -> syn::Result<bool> {
    let mut padded = false;
    for attr in input.attrs.iter().filter(|a| a.path().is_ident("cdtypes")) {
        attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("padded") {
                padded = true;
                Ok(())
            } else {
                Err(meta.error("cdtypes: unknown attribute (the one there is: `padded`)"))
            }
        })?;
    }
    Ok(padded)
}

/// A padded struct's additions: the layout its fingerprint covers, and the checks that its
/// memory is its value (`#[repr(C)]`, no generics, every field `__PlainMemory`, an alignment
/// the receiver can allocate with) followed by its own `__PlainMemory` for this side.
fn padded_parts(input: &DeriveInput, pack: bool) -> syn::Result<(Tokens, Tokens)> {
    let name = &input.ident;
    let err = |msg: &str| syn::Error::new_spanned(name, format!("cdtypes(padded): {msg}"));
    let Data::Struct(s) = &input.data else {
        return Err(err("only a struct travels as its memory"));
    };
    if s.fields.is_empty() {
        return Err(err("a struct without fields has no memory to send"));
    }
    if !input.generics.params.is_empty() {
        return Err(err("a generic struct cannot be padded"));
    }
    let mut repr_c = false;
    for attr in input.attrs.iter().filter(|a| a.path().is_ident("repr")) {
        let list = attr.parse_args_with(
            syn::punctuated::Punctuated::<syn::Meta, syn::Token![,]>::parse_terminated,
        )?;
        repr_c |= list.iter().any(|m| m.path().is_ident("C"));
    }
    if !repr_c {
        return Err(err(
            "needs #[repr(C)]: its memory layout is what travels, and the C layout is the one \
             both ends compute alike",
        ));
    }
    let fields: Vec<Tokens> = s
        .fields
        .iter()
        .enumerate()
        .map(|(i, f)| match &f.ident {
            Some(id) => quote!(#id),
            None => Index::from(i).to_token_stream(),
        })
        .collect();
    let tys: Vec<&syn::Type> = s.fields.iter().map(|f| &f.ty).collect();
    let side = if pack {
        quote!(::cdtypes::__ForPack)
    } else {
        quote!(::cdtypes::__ForUnpack)
    };
    let layout = quote!(
        s.push(&::cdtypes::__padded_layout_text(
            ::std::mem::size_of::<#name>(),
            ::std::mem::align_of::<#name>(),
            &[#(::std::mem::offset_of!(#name, #fields)),*],
        ));
    );
    let memory = quote!(
        const _: () = {
            // every field an integer, a float, an array of them or a padded struct
            fn plain_memory<T: ::cdtypes::__PlainMemory<#side>>() {}
            #[allow(dead_code)]
            fn fields() {
                #(plain_memory::<#tys>();)*
            }
            ::std::assert!(
                ::cdtypes::__padded_layout_ok(
                    ::std::mem::size_of::<#name>(),
                    ::std::mem::align_of::<#name>()
                ),
                "cdtypes(padded): the struct must be aligned to 1, 2, 4 or 8 bytes"
            );
        };
        // SAFETY: #[repr(C)], every field __PlainMemory (checked above), aligned to at most 8
        unsafe impl ::cdtypes::__PlainMemory<#side> for #name {}
    );
    Ok((layout, memory))
}

/// `Path { a: unpack?, .. }`, `Path(unpack?, ..)` or `Path`; fields are read in order.
fn construct(path: Tokens, fields: &Fields) -> Tokens {
    let read = quote!(::cdtypes::Unpack::unpack(u)?);
    match fields {
        Fields::Named(f) => {
            let names = f.named.iter().map(|f| f.ident.as_ref().unwrap());
            quote!(#path { #(#names: #read),* })
        }
        Fields::Unnamed(f) => {
            let reads = f.unnamed.iter().map(|_| &read);
            quote!(#path(#(#reads),*))
        }
        Fields::Unit => path,
    }
}
