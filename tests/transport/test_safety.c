/*
 * test_safety.c - the UCX transport against late, malicious or colliding peers, between real
 * processes on loopback. Usage: test_safety CASE (each case is one ctest test). The cases are
 * in safety_*.c by theme (safety.h).
 */
#include "safety.h"

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s CASE\n", argv[0]);
        return 2;
    }
    const char *c = argv[1];
    open_pipes();
    if (strcmp(c, "late_region") == 0)
        return run_pair(late_region_server, late_region_client_tail, NULL, NULL, 0);
    if (strcmp(c, "single_stall") == 0) {
        cdt_ucx_worker_params wp = {.field_mask = CDT_UCX_WORKER_PARAM_PROTOCOL,
                                    .protocol = CDT_UCX_PROTOCOL_SINGLE};
        return run_pair(single_stall_server, single_stall_client, &wp, &wp, 0);
    }
    if (strcmp(c, "cancel_matched") == 0)
        return run_pair(cancel_matched_server, cancel_matched_client, NULL, NULL, 0);
    if (strcmp(c, "type_ref") == 0)
        return run_pair(type_ref_server, type_ref_client, NULL, NULL, 0);
    if (strcmp(c, "commit") == 0)
        return run_pair(commit_server, commit_client, NULL, NULL, 0);
    if (strcmp(c, "rest_timeout") == 0)
        return run_pair(rest_timeout_server, rest_timeout_client, NULL, NULL, 0);
    if (strcmp(c, "drain_expiry") == 0)
        return run_pair(drain_expiry_server, drain_expiry_client, NULL, NULL, 0);
    if (strcmp(c, "refused_regions") == 0)
        return run_pair(refused_regions_server, refused_regions_client, NULL, NULL, 0);
    if (strcmp(c, "limits") == 0)
        return run_pair(limits_server, limits_client, NULL, NULL, 0);
    if (strcmp(c, "key_conflict") == 0)
        return run_pair(key_conflict_server, key_conflict_client, NULL, NULL, 0);
    cdt_ucx_worker_params id5 = {.field_mask = CDT_UCX_WORKER_PARAM_SENDER_ID, .sender_id = 5};
    cdt_ucx_worker_params id7 = {.field_mask = CDT_UCX_WORKER_PARAM_SENDER_ID, .sender_id = 7};
    if (strcmp(c, "same_id") == 0)
        return run_three(same_id_server, same_id_a, same_id_b, &id5, &id5);
    if (strcmp(c, "forged_key") == 0)
        return run_three(forged_server, victim, forger, &id7, NULL);
    if (strcmp(c, "isolation") == 0) {
        run_three_c2_signal = SIGKILL;
        return run_three(isolation_server, isolation_live, isolation_dying, NULL, NULL);
    }
    fprintf(stderr, "unknown case %s\n", c);
    return 2;
}
