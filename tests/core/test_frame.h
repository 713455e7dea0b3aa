/*
 * test_frame.h - what the files of test_frame share: the helpers that make an object's frame
 * and receive it (frame_codec.c), and the tests that main (test_frame.c) runs, each in the
 * file of its theme.
 */
#ifndef CDT_TEST_FRAME_H
#define CDT_TEST_FRAME_H

#define CHECK_SHARED_COUNTERS /* one pair of counters for all the files (check.h) */
#include "check.h"
#include "cdt_sobj.h"
#include "seed_types.h"

#include <string.h>

/* frame_codec.c: an object's frame as bytes (its iov list checked against them); a frame
 * received by a decoder in random pieces and random order, or with its regions in place */
unsigned char *encode(const void *obj, cdt_count count, cdt_type type, cdt_count *size);
int decode_shuffled(const unsigned char *wire, cdt_count size, void *buf, cdt_count count,
                    cdt_type type, uint64_t *seed);
int decode_in_place(const unsigned char *wire, cdt_count size, void *buf, cdt_count count,
                    cdt_type type);

/* frame_roundtrips.c: the seed objects and predefined layouts through every receive path,
 * the one-call decode against the decoder, gather of any byte range */
void test_seed_roundtrips(void);
void test_layout_frames(void);
void test_plain_frames_match_decoder(void);
void test_gather_ranges(void);

/* frame_regions.c: custom types' regions: a strided region, runs that touch across
 * elements, empty regions and padding, many small regions of every shape in one frame */
void test_strided_regions(void);
void test_region_iov_windows(void);
void test_empty_regions(void);
void test_finish_region_holes(void);
void test_region_runs(void);

/* frame_sobj.c: the serialized-object adapter and its allocator hook; region bytes that come
 * before the packed stream */
void test_sobj(void);
void test_sobj_parts(void);
void test_region_before_head(void);

/* frame_params.c: the caller's head allocator; structs that can grow (field masks) */
void test_head_allocator(void);
void test_growable_structs(void);

/* frame_malformed.c: malformed and truncated frames, streaming misuse, argument errors */
void test_malformed(void);
void test_count_mismatch(void);

#endif
