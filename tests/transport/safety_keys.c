/*
 * safety_keys.c - test_safety's cases of colliding and forged keys (safety.h).
 */
#include "safety.h"

/* ------------------------------------------- two in-flight objects with one key --------- */

void key_conflict_client(peer *p)
{
    uint64_t key = 0x999, len = 65536;
    unsigned char head[128];
    size_t hl = make_head(head, key, 1024, 0, 1, len);
    CHECK(raw_send(p, head, hl, TAG, T_TIMEOUT_MS) == UCS_OK);
    CHECK(raw_send(p, head, hl, TAG + 100, T_TIMEOUT_MS) == UCS_OK);
    send_marker(p, TAG_MARK);
    wait_fd(0, p);
    CHECK(send_region(p, key, len, T_TIMEOUT_MS) == UCS_OK);
    send_marker(p, TAG_DONE);
}

void key_conflict_server(peer *p)
{
    size_t len = 65536;
    unsigned char *a = calloc(1, len), *b = calloc(1, len);
    CHECK(a != NULL && b != NULL);
    cdt_ucx_request ra, rb;
    CHECK_RC(
        cdt_ucx_irecv(p->w, a, (cdt_count)len, CDT_BYTE, TAG, CDT_UCX_TAG_MASK_FULL, NULL, &ra));
    CHECK_RC(cdt_ucx_irecv(p->w, b, (cdt_count)len, CDT_BYTE, TAG + 100, CDT_UCX_TAG_MASK_FULL,
                           NULL, &rb));
    recv_marker(p, TAG_MARK);
    /* both heads matched: the second names the key of the first, in flight */
    int rca = cdt_ucx_request_wait(ra, 5000), rcb = cdt_ucx_request_wait(rb, 5000);
    fprintf(stderr, "two objects with one key: %s, %s\n", cdt_err_name(rca), cdt_err_name(rcb));
    CHECK(rca == CDT_ERR_FRAME_MALFORMED && rcb == CDT_ERR_FRAME_MALFORMED);
    CHECK_RC(cdt_ucx_request_free(ra));
    CHECK_RC(cdt_ucx_request_free(rb));
    memset(a, 0x5A, len);
    memset(b, 0x5A, len);
    signal_fd(0);
    recv_marker(p, TAG_DONE);
    check_untouched(a, len, 0x5A);
    check_untouched(b, len, 0x5A);
    free(a);
    free(b);
}

/* Two senders forced onto one sender id. B's object is in the receiver's queues (unexpected)
 * when A's arrives and the receiver posts A's region receives. */
void same_id_a(peer *p)
{
    wait_fd(0, NULL);
    double_vec v;
    CHECK_RC(double_vec_init(&v, OBJ_ARRAYS, OBJ_LEN, 1));
    CHECK_RC(cdt_ucx_send(p->ep, &v, 1, double_vec_type(), TAG + 1, T_TIMEOUT_MS));
    double_vec_clear(&v);
    wait_fd(1, p); /* the receiver is done */
}

void same_id_b(peer *p)
{
    double_vec v;
    CHECK_RC(double_vec_init(&v, OBJ_ARRAYS, OBJ_LEN, 2));
    cdt_ucx_request r;
    CHECK_RC(cdt_ucx_isend(p->ep, &v, 1, double_vec_type(), TAG + 2, &r));
    send_marker(p, TAG_MARK);
    CHECK_RC(cdt_ucx_request_wait(r, T_TIMEOUT_MS));
    CHECK_RC(cdt_ucx_request_free(r));
    double_vec_clear(&v);
    wait_fd(2, p);
}

void same_id_server(peer *p)
{
    recv_marker(p, TAG_MARK); /* B's head and regions are here, not received yet */
    signal_fd(0);             /* A sends */
    recv_check(p, TAG + 1, 1);
    recv_check(p, TAG + 2, 2);
    signal_fd(1);
    signal_fd(2);
}

/* A third process forges messages on the private tags of a victim whose sender id it knows
 * (given by the bootstrap: the rank). Under protocol version 1 they were exactly the tags of the
 * victim's first objects. */
void forger(peer *p)
{
    static unsigned char junk[OBJ_LEN * 4];
    memset(junk, 0xEE, sizeof(junk));
    for (uint64_t seq = 0; seq < 4; seq++)
        for (uint64_t idx = 0; idx < OBJ_ARRAYS; idx++)
            (void)raw_send(p, junk, sizeof(junk), PRIV((UINT64_C(7) << 20) | seq, idx), 0);
    send_marker(p, TAG_MARK);
    wait_fd(1, p); /* stay connected until the receiver is done */
    signal_fd(5);  /* this is client 2 of run_three */
    /* the forged rendezvous sends are never received: UCX 1.13 cannot destroy a worker with
     * such sends still on an endpoint, so this process just ends */
    _exit(0);
}

void victim(peer *p)
{
    wait_fd(0, NULL);
    for (int i = 0; i < 2; i++) {
        double_vec v;
        CHECK_RC(double_vec_init(&v, OBJ_ARRAYS, OBJ_LEN, 3 + i));
        CHECK_RC(cdt_ucx_send(p->ep, &v, 1, double_vec_type(), TAG + 1, T_TIMEOUT_MS));
        double_vec_clear(&v);
    }
    wait_fd(2, p);
}

void forged_server(peer *p)
{
    recv_marker(p, TAG_MARK); /* the forged messages are queued here */
    signal_fd(0);
    recv_check(p, TAG + 1, 3);
    recv_check(p, TAG + 1, 4);
    signal_fd(1);
    signal_fd(2);
}
