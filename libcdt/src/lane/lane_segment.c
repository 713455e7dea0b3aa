/*
 * lane_segment.c - the lane's segment between two processes (docs/TRANSPORT.md §10.1-2, 10.5):
 * the producer's sealed memfd, the consumer's mapping of it through /proc/<pid>/fd/<fd>, and the
 * pidfds through which each side learns that the other exited.
 *
 * Why these: a memfd has no name anywhere, so no SIGKILL at any point can leave a file in
 * /dev/shm; its seals keep a peer from shrinking it under our mapping (a mapping past a file's
 * end raises SIGBUS); opening another process's descriptor through /proc needs ptrace *read*
 * access, which Yama's ptrace_scope=1 does not restrict (cross-memory attach needs attach
 * access, which it refuses); a pidfd turns readable when its process exits, whoever reaped it.
 */
#define _GNU_SOURCE
#include "lane/lane.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#define CDT__LANE_SEALS (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)
#define CDT__LANE_MEMFD_NAME "cdt-lane"
/* what /proc/<pid>/fd/<fd> reads as for such a memfd */
#define CDT__LANE_MEMFD_LINK "/memfd:" CDT__LANE_MEMFD_NAME " (deleted)"
/* and for a pipe (a version 2 segment's doorbell, docs/TRANSPORT.md §10.6): "pipe:[inode]" */
#define CDT__LANE_PIPE_LINK "pipe:["

static int pidfd_open_(pid_t pid)
{
#ifdef SYS_pidfd_open
    return (int)syscall(SYS_pidfd_open, pid, 0);
#else
    (void)pid;
    errno = ENOSYS;
    return -1;
#endif
}

static int random_bytes(uint8_t *p, size_t n)
{
    while (n > 0) {
        ssize_t got = getrandom(p, n, 0);
        if (got < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        p += got;
        n -= (size_t)got;
    }
    return 0;
}

/* errno of a failed memfd/mmap/ftruncate as a status: a limit, or no such facility */
static int errno_status(int e)
{
    return (e == ENOSYS || e == EINVAL || e == EPERM) ? CDT_ERR_UNSUPPORTED : CDT_ERR_NO_MEMORY;
}

int cdt__lane_create(const cdt__lane_params *params, cdt__lane *lane, cdt__lane_offer *offer)
{
    if (lane == NULL || offer == NULL)
        return CDT_ERR_INVALID_ARG;
    cdt__lane_offer o;
    memset(&o, 0, sizeof o);
    o.ring_bytes = params && params->ring_bytes ? params->ring_bytes : CDT__LANE_DEFAULT_RING;
    o.grant_slots = params && params->grant_slots ? params->grant_slots : CDT__LANE_DEFAULT_GRANTS;
    o.frag_bytes = params && params->frag_bytes ? params->frag_bytes : CDT__LANE_DEFAULT_FRAG;
    if (cdt__lane_check_sizes(o.ring_bytes, o.grant_slots, o.frag_bytes) != CDT_SUCCESS)
        return CDT_ERR_INVALID_ARG;
    uint32_t heads = params ? params->head_ring_bytes : 0;
    if (heads == 1)
        heads = CDT__LANE_DEFAULT_HEAD_RING;
    if (heads != 0 && cdt__lane_check_head_ring(heads) != CDT_SUCCESS)
        return CDT_ERR_INVALID_ARG;
    if (random_bytes(o.nonce, sizeof o.nonce) != 0)
        return CDT_ERR_UNSUPPORTED;
    size_t total = cdt__lane_data_offset(o.grant_slots) + (size_t)o.ring_bytes + heads;
    /* version 2: the doorbell, a pipe whose read end is handed over as the memfd is (an
     * eventfd cannot be opened again through /proc: it is an anonymous inode) */
    int bell[2] = {-1, -1};
    if (heads != 0 && pipe2(bell, O_NONBLOCK | O_CLOEXEC) != 0)
        return errno_status(errno);
    int fd = memfd_create(CDT__LANE_MEMFD_NAME, MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0) {
        int e = errno;
        if (bell[0] >= 0) {
            close(bell[0]);
            close(bell[1]);
        }
        return errno_status(e);
    }
    int rc;
    if (ftruncate(fd, (off_t)total) != 0) {
        rc = errno_status(errno);
        goto err_fd;
    }
    if (fcntl(fd, F_ADD_SEALS, CDT__LANE_SEALS) != 0) {
        rc = CDT_ERR_UNSUPPORTED;
        goto err_fd;
    }
    /* populated now: the first pass through the ring takes no page faults */
    void *mem = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
    if (mem == MAP_FAILED) {
        rc = errno_status(errno);
        goto err_fd;
    }
    o.pid = (int32_t)getpid();
    o.fd = fd;
    if (heads != 0)
        cdt__lane_format_heads(mem, &o, heads, (int32_t)bell[0]);
    else
        cdt__lane_format(mem, &o);
    rc = cdt__lane_view(mem, total, CDT__LANE_PRODUCER, &o, lane);
    if (rc != CDT_SUCCESS) {
        munmap(mem, total);
        goto err_fd;
    }
    lane->owns_mapping = 1;
    lane->memfd = fd;
    /* the word a consumer may read to learn whether it can read this process's memory (§10.3,
     * Regions moved by both cores): the lane's own field, alive as long as the lane */
    lane->probe_word = UINT64_C(0x43445450524f4245); /* "CDTPROBE" */
    __atomic_store_n((uint64_t *)(void *)(lane->base + CDT__LANE_OFF_PROD_PROBE),
                     (uint64_t)(uintptr_t)&lane->probe_word, __ATOMIC_RELAXED);
    lane->doorbell = bell[1];
    lane->doorbell_rd = bell[0];
    *offer = o;
    return CDT_SUCCESS;
err_fd:
    close(fd);
    if (bell[0] >= 0) {
        close(bell[0]);
        close(bell[1]);
    }
    return rc;
}

/* Consumer of a version 2 segment: open the read end of the producer's doorbell, whose number
 * the header gave (read once, into the lane, by cdt__lane_view). Like the memfd, checked before
 * it is opened: only a pipe, whose nonblocking open for reading blocks nothing and has no
 * effect of its own. */
static int open_doorbell(int32_t pid, cdt__lane *lane)
{
    if (lane->doorbell_num < 0)
        return CDT_ERR_FRAME_MALFORMED;
    char path[64], target[64];
    snprintf(path, sizeof path, "/proc/%d/fd/%d", (int)pid, (int)lane->doorbell_num);
    ssize_t tn = readlink(path, target, sizeof target - 1);
    if (tn < 0)
        return CDT_ERR_UNSUPPORTED;
    target[tn] = '\0';
    if (strncmp(target, CDT__LANE_PIPE_LINK, strlen(CDT__LANE_PIPE_LINK)) != 0)
        return CDT_ERR_FRAME_MALFORMED;
    int fd = open(path, O_RDONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return CDT_ERR_UNSUPPORTED;
    struct stat st; /* the descriptor may have changed between the check and the open */
    if (fstat(fd, &st) != 0 || !S_ISFIFO(st.st_mode)) {
        close(fd);
        return CDT_ERR_FRAME_MALFORMED;
    }
    lane->doorbell = fd;
    return CDT_SUCCESS;
}

/* 8 bytes of process pid at addr: read (and written back when `write`) with cross-memory
 * attach. 1 when the calls passed: this process may copy to and from that one's memory. The
 * address is the peer's to name: a wrong one only fails the probe. */
static int probe_peer(pid_t pid, uint64_t addr, int write)
{
    if (pid <= 0 || addr == 0)
        return 0;
    uint64_t v = 0;
    struct iovec local = {&v, sizeof v}, remote = {(void *)(uintptr_t)addr, sizeof v};
    if (process_vm_readv(pid, &local, 1, &remote, 1, 0) != (ssize_t)sizeof v)
        return 0;
    return !write || process_vm_writev(pid, &local, 1, &remote, 1, 0) == (ssize_t)sizeof v;
}

int cdt__lane_attach_features(const cdt__lane_offer *offer, cdt__lane *lane, uint32_t extra)
{
    if (offer == NULL || lane == NULL || offer->pid <= 0 || offer->fd < 0)
        return CDT_ERR_INVALID_ARG;
    if (cdt__lane_check_sizes(offer->ring_bytes, offer->grant_slots, offer->frag_bytes) !=
        CDT_SUCCESS)
        return CDT_ERR_FRAME_MALFORMED;
    /* version 1's size; a version 2 segment has its head ring more (checked below) */
    size_t total = cdt__lane_data_offset(offer->grant_slots) + (size_t)offer->ring_bytes;
    /* the pidfd first: if the pid is reused before the open below, the file is the new
     * process's, which cannot hold the nonce */
    int pidfd = pidfd_open_((pid_t)offer->pid);
    if (pidfd < 0)
        return errno == ESRCH ? CDT_ERR_PEER : CDT_ERR_UNSUPPORTED;
    char path[64], target[64];
    snprintf(path, sizeof path, "/proc/%d/fd/%d", (int)offer->pid, (int)offer->fd);
    /* Before opening anything, the descriptor must name a lane's memfd: the offer is the
     * peer's, and opening whatever file it names (a device, a file on a stalled network or
     * FUSE mount) could block us or have effects of its own. No other file has this name:
     * it would be a file "memfd:cdt-lane (deleted)" in the root folder. */
    int rc;
    ssize_t tn = readlink(path, target, sizeof target - 1);
    if (tn < 0) {
        rc = CDT_ERR_UNSUPPORTED; /* no such descriptor, or no read access to it */
        goto err_pidfd;
    }
    target[tn] = '\0';
    if (strcmp(target, CDT__LANE_MEMFD_LINK) != 0) {
        rc = CDT_ERR_FRAME_MALFORMED;
        goto err_pidfd;
    }
    /* O_NONBLOCK, O_NOCTTY: should the descriptor change between the check and the open */
    int fd = open(path, O_RDWR | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        rc = CDT_ERR_UNSUPPORTED;
        goto err_pidfd;
    }
    struct stat st;
    int seals = fcntl(fd, F_GET_SEALS);
    int stat_ok = fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
    if (stat_ok && (uint64_t)st.st_size > total &&
        cdt__lane_check_head_ring((uint64_t)st.st_size - total) == CDT_SUCCESS)
        total = (size_t)st.st_size; /* the header must then say version 2 (cdt__lane_view) */
    if (!stat_ok || (uint64_t)st.st_size != total || seals < 0 ||
        (seals & (F_SEAL_SHRINK | F_SEAL_SEAL)) != (F_SEAL_SHRINK | F_SEAL_SEAL)) {
        rc = CDT_ERR_FRAME_MALFORMED;
        goto err_fd;
    }
    void *mem = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
    if (mem == MAP_FAILED) {
        rc = errno_status(errno);
        goto err_fd;
    }
    close(fd); /* the mapping keeps the memory */
    rc = cdt__lane_view(mem, total, CDT__LANE_CONSUMER, offer, lane);
    if (rc != CDT_SUCCESS) {
        munmap(mem, total);
        close(pidfd);
        return rc;
    }
    lane->owns_mapping = 1;
    lane->pidfd = pidfd;
    lane->same_process = offer->pid == (int32_t)getpid();
    if (lane->head_ring_bytes != 0) {
        rc = open_doorbell(offer->pid, lane);
        if (rc != CDT_SUCCESS) {
            cdt__lane_close(lane);
            return rc;
        }
    }
    __atomic_store_n((uint32_t *)(void *)(lane->base + CDT__LANE_OFF_CONSUMER_PID),
                     (uint32_t)getpid(), __ATOMIC_RELAXED);
    /* HEADS needs the head ring of a version 2 segment, and large records are head ring records;
     * the other bits hold on either version */
    if (lane->head_ring_bytes == 0)
        extra &= ~CDT__LANE_FEATURE_HEADS;
    uint32_t features = CDT__LANE_FEATURES | extra;
    if (!(features & CDT__LANE_FEATURE_HEADS))
        features &= ~CDT__LANE_FEATURE_LARGE;
    /* the split needs this side to read the producer's memory (its probe word; a value read
     * once from the segment) and the commit in the ring, which a SPLIT object always has */
    lane->peer_pid = offer->pid;
    if ((features & CDT__LANE_FEATURE_SPLIT) &&
        ((features & CDT__LANE_FEATURE_RING_COMMIT) == 0 ||
         !probe_peer((pid_t)offer->pid,
                     __atomic_load_n((uint64_t *)(void *)(lane->base + CDT__LANE_OFF_PROD_PROBE),
                                     __ATOMIC_RELAXED),
                     0)))
        features &= ~CDT__LANE_FEATURE_SPLIT;
    if (features & CDT__LANE_FEATURE_SPLIT) {
        lane->probe_word = UINT64_C(0x43445450524f4245);
        __atomic_store_n((uint64_t *)(void *)(lane->base + CDT__LANE_OFF_CONS_PROBE),
                         (uint64_t)(uintptr_t)&lane->probe_word, __ATOMIC_RELAXED);
        lane->split = 1;
    }
    lane->own_features = features; /* the bound of the records it takes (lane_heads.c) */
    __atomic_store_n((uint32_t *)(void *)(lane->base + CDT__LANE_OFF_CONSUMER_FEATURES), features,
                     __ATOMIC_RELAXED);
    __atomic_store_n((uint32_t *)(void *)(lane->base + CDT__LANE_OFF_ATTACHED), 1u,
                     __ATOMIC_RELEASE);
    return CDT_SUCCESS;
err_fd:
    close(fd);
err_pidfd:
    close(pidfd);
    return rc;
}

int cdt__lane_attach(const cdt__lane_offer *offer, cdt__lane *lane)
{
    return cdt__lane_attach_features(offer, lane, 0);
}

int cdt__lane_attached(cdt__lane *lane)
{
    if (lane == NULL || lane->base == NULL || lane->role != CDT__LANE_PRODUCER)
        return CDT_ERR_INVALID_ARG;
    if (lane->error != CDT_SUCCESS)
        return lane->error;
    if (lane->pidfd >= 0)
        return 1;
    if (__atomic_load_n((uint32_t *)(void *)(lane->base + CDT__LANE_OFF_ATTACHED),
                        __ATOMIC_ACQUIRE) != 1u)
        return 0;
    int32_t pid = (int32_t)__atomic_load_n(
        (uint32_t *)(void *)(lane->base + CDT__LANE_OFF_CONSUMER_PID), __ATOMIC_RELAXED);
    int pidfd = pid > 0 ? pidfd_open_((pid_t)pid) : -1;
    if (pidfd < 0) { /* no such process: the consumer lied or is gone */
        lane->error = CDT_ERR_PEER;
        return CDT_ERR_PEER;
    }
    lane->pidfd = pidfd;
    lane->same_process = pid == (int32_t)getpid();
    /* read once, after attached (acquire above): a later scribble changes nothing here */
    lane->peer_features = __atomic_load_n(
        (uint32_t *)(void *)(lane->base + CDT__LANE_OFF_CONSUMER_FEATURES), __ATOMIC_RELAXED);
    /* the split: this side must also write the consumer's memory (its probe word, read once
     * from the segment after attached; written back with the value it holds) */
    lane->peer_pid = pid;
    lane->split =
        (lane->peer_features & CDT__LANE_FEATURE_SPLIT) &&
        probe_peer((pid_t)pid,
                   __atomic_load_n((uint64_t *)(void *)(lane->base + CDT__LANE_OFF_CONS_PROBE),
                                   __ATOMIC_RELAXED),
                   1);
    /* the consumer mapped it: the mapping keeps the memory, and with the descriptor closed no
     * other process can open the segment through /proc, nor does it cost a descriptor */
    close(lane->memfd);
    lane->memfd = -1;
    if (lane->doorbell_rd >= 0) { /* the consumer opened its own read end */
        close(lane->doorbell_rd);
        lane->doorbell_rd = -1;
    }
    return 1;
}

int cdt__lane_peer_alive(cdt__lane *lane)
{
    if (lane == NULL || lane->pidfd < 0)
        return 1;
    struct pollfd p = {.fd = lane->pidfd, .events = POLLIN};
    int r;
    do
        r = poll(&p, 1, 0);
    while (r < 0 && errno == EINTR);
    if (r > 0 && (p.revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
        lane->error = CDT_ERR_PEER;
        return 0;
    }
    return 1;
}

void cdt__lane_close(cdt__lane *lane)
{
    if (lane == NULL)
        return;
    /* descriptors only where create or attach opened them: a zeroed lane holds fd 0 */
    if (lane->owns_mapping) {
        if (lane->base != NULL)
            munmap(lane->base, lane->map_bytes);
        if (lane->memfd >= 0)
            close(lane->memfd);
        if (lane->pidfd >= 0)
            close(lane->pidfd);
        if (lane->doorbell >= 0)
            close(lane->doorbell);
        if (lane->doorbell_rd >= 0)
            close(lane->doorbell_rd);
    }
    memset(lane, 0, sizeof *lane);
    lane->memfd = -1;
    lane->pidfd = -1;
    lane->doorbell = -1;
    lane->doorbell_rd = -1;
}
