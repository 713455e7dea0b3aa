/*
 * bench_transfer.c - two processes over UCX on this machine (OSU style). For each object type
 * of the seed paper and each size: latency (half round trip of a ping-pong) and bandwidth
 * (windows of non-blocking sends, then a 1-byte acknowledgement), for
 *   raw          ucp_tag_send_nbx of a contiguous buffer of the same byte count (the roofline),
 *                on libcdt's endpoint (peer error handling)
 *   raw_nopeer   the same on an endpoint without peer error handling (UCX's fastest choice)
 *   libcdt       cdt_ucx_isend / cdt_ucx_irecv of the object (one matched message)
 *   manual_pack  hand-written pack into bytes, raw send, raw receive, hand-written unpack (one
 *                buffer per message of a window on each side, as a program with that many
 *                messages in flight needs)
 *   ucx_iov      one UCX IOV message: packed fields first, then every region (as the seed)
 *   ucx_generic  one UCX message of a generic datatype (ucp_dt_make_generic): its pack callback
 *                copies the frame (cdt_frame_gather), its unpack callback feeds the decoder
 *                (cdt_decoder_write), so packing happens inside UCX's own copies
 * Every buffer is written before it is first sent (no untouched zero pages).
 * Usage: bench_transfer [--quick] [--csv FILE] [--transports FILE] [--cases A,B] [--methods A,B]
 *        [--size BYTES] [--bandwidth-only] [--total-mib M]   (one point, e.g. for a profile;
 *        any size, also one between the sweep's powers)
 *        [--latency-only]   (the ping-pong pass alone: small objects)
 *        [--lat-median]     (latency: the median round trip's half, not the mean's: a busy
 *                            machine's preemptions move the mean by milliseconds)
 *        [--rewrite]        (the sender writes every cache line of what it sends before each
 *                            send, by every method, raw included, as a program sends what it
 *                            computed since its last send: without it a buffer sent again
 *                            unchanged stays in the receiver's cache, and a pull of it (raw's
 *                            rendezvous over cma) reads lines no other core modified;
 *                            also CDT_BENCH_REWRITE=1)
 *        (forks the peer itself; --cases / --methods run only the named ones)
 * MB = 10^6 bytes.
 * The files: bench_transfer.c (the options, the bootstrap, the cases and the report: main),
 * transfer_methods.c, transfer_objects.c, transfer_generic.c, transfer_timing.c
 * (bench_transfer.h).
 */
#include "bench_transfer.h"

int lat_median;
int rewrite_before_send;

static const char *method_name[] = {"raw",         "raw_nopeer", "libcdt",
                                    "manual_pack", "ucx_iov",    "ucx_generic"};

/* whether `name` is one of the comma-separated names in `list` (NULL: every name) */
static int listed(const char *list, const char *name)
{
    if (list == NULL)
        return 1;
    size_t nl = strlen(name);
    for (const char *p = list; (p = strstr(p, name)) != NULL; p += nl)
        if ((p == list || p[-1] == ',') && (p[nl] == ',' || p[nl] == '\0'))
            return 1;
    return 0;
}

typedef struct kase_desc {
    const char *name;
    enum kase k;
    cdt_count sub; /* double_vec sub-vector bytes */
    int reuse;     /* double_vec: every message into the arrays of one double_vec (obj.reuse) */
    int padded;    /* struct_simple: its gap declared padding (obj.padded) */
} kase_desc;

int main(int argc, char **argv)
{
    int quick = 0;
    const char *csv_path = NULL, *transports_path = NULL, *only = NULL, *only_methods = NULL;
    /* one point for a profile: --size N (bytes), --bandwidth-only, --total-mib M */
    long long only_size = 0, total_mib = 0;
    int bandwidth_only = 0, latency_only = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0)
            quick = 1;
        else if (strcmp(argv[i], "--csv") == 0 && i + 1 < argc)
            csv_path = argv[++i];
        else if (strcmp(argv[i], "--transports") == 0 && i + 1 < argc)
            transports_path = argv[++i];
        else if (strcmp(argv[i], "--cases") == 0 && i + 1 < argc)
            only = argv[++i]; /* comma-separated case names */
        else if (strcmp(argv[i], "--methods") == 0 && i + 1 < argc)
            only_methods = argv[++i];
        else if (strcmp(argv[i], "--size") == 0 && i + 1 < argc)
            only_size = atoll(argv[++i]);
        else if (strcmp(argv[i], "--total-mib") == 0 && i + 1 < argc)
            total_mib = atoll(argv[++i]);
        else if (strcmp(argv[i], "--latency-only") == 0)
            latency_only = 1;
        else if (strcmp(argv[i], "--lat-median") == 0)
            lat_median = 1;
        else if (strcmp(argv[i], "--bandwidth-only") == 0)
            bandwidth_only = 1;
        else if (strcmp(argv[i], "--rewrite") == 0)
            rewrite_before_send = 1;
        else
            DIE("usage: %s [--quick] [--csv FILE] [--transports FILE] [--cases A,B] [--methods "
                "A,B] [--size BYTES] [--bandwidth-only] [--latency-only] [--lat-median] "
                "[--rewrite] [--total-mib M]",
                argv[0]);
    }
    const char *rewrite_env = getenv("CDT_BENCH_REWRITE");
    if (rewrite_env != NULL && strcmp(rewrite_env, "1") == 0)
        rewrite_before_send = 1; /* as --rewrite (bench/transfer/run's *_rewrite sets) */
    /* endpoints from exchanged worker addresses (as MPI or a file would bootstrap): UCX then
     * picks shared memory for two processes on one machine */
    int up[2], down[2];
    if (pipe(up) != 0 || pipe(down) != 0)
        DIE("pipe");
    pid_t pid = fork();
    env e = {.server = pid == 0, .quick = quick};
    if (e.server)
        alarm(quick ? 300 : 3600);
    cdt_ucx_context ctx;
    OK(cdt_ucx_context_create(NULL, &ctx));
    OK(cdt_ucx_worker_create(ctx, NULL, &e.w));
    cdt_ucx_listener l = NULL;
    void *addr;
    size_t alen;
    OK(cdt_ucx_worker_address(e.w, &addr, &alen));
    int wfd = e.server ? up[1] : down[1], rfd = e.server ? down[0] : up[0];
    if (write(wfd, &alen, sizeof(alen)) != sizeof(alen) || write(wfd, addr, alen) != (ssize_t)alen)
        DIE("pipe write");
    size_t plen;
    if (read(rfd, &plen, sizeof(plen)) != sizeof(plen) || plen > 65536)
        DIE("pipe read");
    unsigned char *paddr = malloc(plen);
    for (size_t got = 0; got < plen;) {
        ssize_t n = read(rfd, paddr + got, plen - got);
        if (n <= 0)
            DIE("pipe read");
        got += (size_t)n;
    }
    cdt_ucx_worker_address_free(e.w, addr);
    OK(cdt_ucx_ep_create_from_address(e.w, paddr, plen, &e.ep));
    e.uw = cdt_ucx_worker_handle(e.w);
    e.uep = cdt_ucx_ep_handle(e.ep);
    ucp_ep_params_t np = {.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS |
                                        UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE,
                          .address = (const ucp_address_t *)paddr,
                          .err_mode = UCP_ERR_HANDLING_MODE_NONE};
    if (ucp_ep_create(e.uw, &np, &e.uep_nopeer) != UCS_OK)
        DIE("ucp_ep_create (no peer error handling)");
    if (ucp_dt_create_generic(&gen_ops, NULL, &e.gen_dt) != UCS_OK)
        DIE("ucp_dt_create_generic");
    free(paddr);
    /* one rendezvous-sized message each way on both endpoints wires up every lane, and a
     * libcdt object each way sets up libcdt's own lane where the endpoint takes one
     * (docs/TRANSPORT.md §10), then the transports in use are reported (they are part of the
     * result; before a libcdt object the endpoint's lane was not yet offered) */
    {
        obj w;
        obj_make(&w, K_BYTES, 1 << 20, 0, 1);
        for (int m = M_RAW; m <= M_LIBCDT; m++)
            latency_us(&e, &w, (enum method)m, 2);
        obj_free(&w);
        char t[512];
        OK(cdt_ucx_ep_transports(e.ep, t, sizeof(t)));
        cdt_ucx_protocol proto;
        OK(cdt_ucx_ep_protocol(e.ep, &proto));
        const char *proto_name = proto == CDT_UCX_PROTOCOL_SINGLE
                                     ? "single (the object as one message)"
                                     : "split (head, tail and large regions as messages)";
        char *text = NULL;
        size_t text_len = 0;
        FILE *f = open_memstream(&text, &text_len);
        ucp_ep_print_info(e.uep_nopeer, f);
        fclose(f);
        if (!e.server) {
            FILE *tf = transports_path != NULL ? fopen(transports_path, "w") : NULL;
            for (FILE *out = stdout; out != NULL; out = out == stdout ? tf : NULL) {
                fprintf(out,
                        "UCX %s, UCX_TLS=%s\nlibcdt endpoint (peer error handling): %s\n"
                        "libcdt protocol (cdt_ucx_ep_protocol): %s\n",
                        cdt_ucx_version_string(),
                        getenv("UCX_TLS") ? getenv("UCX_TLS") : "(default)", t, proto_name);
                fprintf(out, "raw_nopeer endpoint lanes (ucp_ep_print_info):\n");
                for (char *line = text; line != NULL && *line != '\0';) {
                    char *nl = strchr(line, '\n');
                    if (strstr(line, "lane[") != NULL)
                        fprintf(out, "%.*s\n", nl != NULL ? (int)(nl - line) : (int)strlen(line),
                                line);
                    line = nl != NULL ? nl + 1 : NULL;
                }
            }
            if (tf != NULL)
                fclose(tf);
        }
        free(text);
    }
    FILE *csv = NULL;
    if (!e.server) {
        csv = csv_path != NULL ? fopen(csv_path, "w") : NULL;
        if (csv_path != NULL && csv == NULL)
            DIE("cannot write %s", csv_path);
        if (csv != NULL)
            fprintf(csv, "case,method,size_bytes,metric,value,unit\n");
    }
    const kase_desc kases[] = {
        {"bytes", K_BYTES, 0, 0, 0},
        {"struct_simple", K_SIMPLE, 0, 0, 0},
        /* the same records, their 4-byte gap declared padding: libcdt moves their memory (24
         * bytes a record, one region) instead of packing 20; the other methods as above */
        {"struct_simple_padded", K_SIMPLE, 0, 0, 1},
        {"struct_simple_no_gap", K_NOGAP, 0, 0, 0},
        {"struct_vec", K_STRUCTVEC, 0, 0, 0},
        {"double_vec_64", K_DOUBLEVEC, 64, 0, 0},
        {"double_vec_1k", K_DOUBLEVEC, 1024, 0, 0},
        {"double_vec_4k", K_DOUBLEVEC, 4096, 0, 0},
        {"double_vec_128k", K_DOUBLEVEC, 131072, 0, 0},
        /* region sizes around the zero-copy threshold and the lane's (docs/TRANSPORT.md §10.3,
         * Regions): bandwidth only, run when named with --cases */
        {"double_vec_64k", K_DOUBLEVEC, 65536, 0, 0},
        {"double_vec_512k", K_DOUBLEVEC, 524288, 0, 0},
        {"double_vec_2m", K_DOUBLEVEC, 2097152, 0, 0},
        {"double_vec_8m", K_DOUBLEVEC, 8388608, 0, 0},
        /* double_vec_1k and double_vec_128k with the receiver's memory reused: every message
         * is received into the arrays of one double_vec, as raw receives every message into
         * one buffer and the struct cases into one array (until 2026-11-28 each message of a
         * window had its own double_vec: 64 MiB of arrays at 1 MiB, out of the caches that
         * raw's one buffer stays in). Allocating the arrays of every object is the receive
         * type's contract (the rows above); these rows show the move without it, so the
         * difference between the two is the allocation's cost (the demo's "memory reused"
         * row). Bandwidth only */
        {"double_vec_1k_reused", K_DOUBLEVEC, 1024, 1, 0},
        {"double_vec_128k_reused", K_DOUBLEVEC, 131072, 1, 0},
        /* reused arrays of the sizes between, where the lane's split may start (docs/TRANSPORT.md
         * §10.3, Regions moved by both cores): run when named */
        {"double_vec_4k_reused", K_DOUBLEVEC, 4096, 1, 0},
        {"double_vec_8k_reused", K_DOUBLEVEC, 8192, 1, 0},
        {"double_vec_16k_reused", K_DOUBLEVEC, 16384, 1, 0},
        {"double_vec_32k_reused", K_DOUBLEVEC, 32768, 1, 0},
    };
    const cdt_count lat_max = quick ? 65536 : 1 << 20;
    const cdt_count bw_min = 1024, bw_max = quick ? (cdt_count)64 << 20 : (cdt_count)256 << 20;
    for (size_t ki = 0; ki < sizeof(kases) / sizeof(kases[0]); ki++) {
        const kase_desc *kd = &kases[ki];
        const int by_default =
            kd->k != K_DOUBLEVEC ||
            (kd->reuse ? kd->sub == 1024 || kd->sub == 131072
                       : kd->sub == 1024 || kd->sub == 131072 || kd->sub == 64 || kd->sub == 4096);
        if (!listed(only, kd->name) || (only == NULL && !by_default))
            continue;
        /* how many of the case's objects went through the lane (none with the lane off) */
        cdt_ucx_worker_stats st0 = {.field_mask = CDT_UCX_WORKER_STATS_LANE_SENT};
        OK(cdt_ucx_worker_stats_get(e.w, &st0));
        for (int pass = 0; pass < 2; pass++) { /* 0 latency, 1 bandwidth */
            if (pass == 0 && kd->k == K_DOUBLEVEC && (kd->sub > 131072 || kd->reuse) &&
                only_size <= 0)
                continue; /* the region sizes and the reused rows: bandwidth only (but at a
                           * size named with --size) */
            if (quick && pass == 0 && kd->k == K_DOUBLEVEC && kd->sub != 1024)
                continue;
            if ((bandwidth_only && pass == 0) || (latency_only && pass == 1))
                continue;
            if (pass == 1 && kd->k == K_DOUBLEVEC && kd->sub != 1024 && kd->sub < 65536 &&
                !kd->reuse)
                continue; /* bandwidth at 1 KiB sub-vectors (the seed), from 64 KiB, reused */
            if (!e.server) {
                printf("# %s %s (MB = 10^6 bytes)\n# Size", kd->name,
                       pass == 0 ? "latency" : "bandwidth");
                for (int m = 0; m < M_COUNT; m++)
                    printf("  %14s", method_name[m]);
                printf("   [%s]\n", pass == 0 ? "Latency (us)" : "Bandwidth (MB/s)");
            }
            cdt_count start = pass == 0 ? 1 : bw_min, end = pass == 0 ? lat_max : bw_max;
            cdt_count step = pass == 0 ? 2 : (quick ? 4 : 2);
            if (only_size > 0) /* that size alone, on the sweep or not (12 KiB, 24 KiB) */
                start = end = (cdt_count)only_size;
            for (cdt_count size = start; size <= end; size *= step) {
                if (kd->k != K_BYTES && size < elem_size(kd->k))
                    continue;
                if (kd->k == K_DOUBLEVEC && size < 4)
                    continue;
                if (only_size > 0 && size != only_size)
                    continue;
                if (!e.server)
                    printf("%-10lld", (long long)size);
                for (int m = 0; m < M_COUNT; m++) {
                    int applicable = (m == M_RAW || m == M_RAW_NOPEER || kd->k != K_BYTES) &&
                                     listed(only_methods, method_name[m]);
                    if (m == M_IOV && (kd->k == K_SIMPLE || kd->k == K_NOGAP))
                        applicable = 0; /* no regions: an IOV message is the manual pack */
                    if (!applicable) {
                        if (!e.server)
                            printf("  %14s", "-");
                        continue;
                    }
                    int window = pass == 0 ? 1
                                           : (int)(size >= ((cdt_count)64 << 20) ? 1
                                                   : ((cdt_count)64 << 20) / size > 64
                                                       ? 64
                                                       : ((cdt_count)64 << 20) / size);
                    obj o;
                    obj_make(&o, kd->k, size, kd->sub, window);
                    o.reuse = kd->reuse;
                    o.padded = kd->padded;
                    double v;
                    if (pass == 0) {
                        int iters = size <= 4096 ? (quick ? 300 : 3000) : quick ? 30 : 300;
                        if (o.size >= (1 << 20))
                            iters = quick ? 10 : 50;
                        v = latency_us(&e, &o, (enum method)m, iters);
                    } else {
                        /* at least 1 GiB per point (256 MiB quick) */
                        cdt_count total = total_mib > 0 ? (cdt_count)total_mib << 20
                                          : quick       ? (cdt_count)256 << 20
                                                        : (cdt_count)1 << 30;
                        cdt_count wn = (total + o.size * window - 1) / (o.size * window);
                        int windows = wn < 2 ? 2 : (int)wn;
                        v = bandwidth_mbs(&e, &o, (enum method)m, windows);
                    }
                    if (!e.server) {
                        printf("  %14.2f", v);
                        fflush(stdout);
                        if (csv != NULL)
                            fprintf(csv, "%s,%s,%lld,%s,%.3f,%s\n", kd->name, method_name[m],
                                    (long long)size, pass == 0 ? "latency_us" : "bandwidth_mbs", v,
                                    pass == 0 ? "us" : "MB/s");
                    }
                    obj_free(&o);
                }
                if (!e.server)
                    printf("\n");
            }
        }
        cdt_ucx_worker_stats st1 = {.field_mask = CDT_UCX_WORKER_STATS_LANE_SENT};
        OK(cdt_ucx_worker_stats_get(e.w, &st1));
        if (!e.server)
            printf("# %s: %llu objects sent through the lane\n", kd->name,
                   (unsigned long long)(st1.lane_sent - st0.lane_sent));
    }
    if (csv != NULL)
        fclose(csv);
    ack(&e, e.server); /* both done before closing */
    ucp_dt_destroy(e.gen_dt);
    ucp_request_param_t cp = {.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS,
                              .flags = UCP_EP_CLOSE_FLAG_FORCE};
    void *cq = ucp_ep_close_nbx(e.uep_nopeer, &cp);
    if (UCS_PTR_IS_PTR(cq)) {
        while (ucp_request_check_status(cq) == UCS_INPROGRESS)
            ucp_worker_progress(e.uw);
        ucp_request_free(cq);
    }
    cdt_ucx_ep_close(e.ep, 2000);
    cdt_ucx_listener_destroy(l);
    cdt_ucx_worker_destroy(e.w);
    cdt_ucx_context_destroy(ctx);
    if (e.server)
        _exit(0);
    int status;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}
