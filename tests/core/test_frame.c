/*
 * test_frame.c - frames: round trips of every seed object through one-shot decode and through
 * the streaming decoder (random piece order and sizes, regions received in place), the
 * serialized-object adapter, large contiguous layouts as regions, and a table of malformed
 * frames that must each give their error without crashing or reading past the input.
 *
 * main runs the tests, which live by theme (test_frame.h): frame_codec.c (the helpers that
 * make and receive frames), frame_roundtrips.c, frame_regions.c, frame_sobj.c,
 * frame_params.c and frame_malformed.c.
 */
#include "test_frame.h"

int check_failures, check_count; /* check.h: one pair for all the files of the program */

int main(void)
{
    test_seed_roundtrips();
    test_layout_frames();
    test_plain_frames_match_decoder();
    test_strided_regions();
    test_region_iov_windows();
    test_sobj();
    test_sobj_parts();
    test_growable_structs();
    test_region_before_head();
    test_empty_regions();
    test_finish_region_holes();
    test_region_runs();
    test_gather_ranges();
    test_head_allocator();
    test_malformed();
    test_count_mismatch();
    return check_report("test_frame");
}
