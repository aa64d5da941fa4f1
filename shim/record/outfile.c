/*
 * The bounded ring file.  Segments are appended after the file header and the producer frame
 * (the version of libchurn); when the next one would pass the bound, writing wraps to just
 * after them and overwrites the oldest.
 * The segment being filled is written at checkpoints, at the place it will have when closed:
 * the new part of its frame, then an open header that counts it (docs/format.md, "Open
 * segments"), so a kill -9 or an exit libchurn cannot see loses only what came after the last
 * checkpoint, and a kill between the two writes leaves the previous checkpoint whole.  Closing
 * writes the rest of the frame, then the closed header over the open one.
 *
 * The file is created with O_EXCL | O_NOFOLLOW and mode 0600: a symlink planted at the path
 * is refused, never followed, and an old regular file is replaced, never written through.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "churn/version.h"
#include "record/encode.h" /* the open segment's kind: a key or a delta one */
#include "shim.h"

static _Atomic int fd = -1;
static int cur = -1; /* its number for the write under way (hold .. release) */
static char path_now[sizeof churn_opt.out];
static int gone; /* the trace's file cannot be reached again (said once) */
static pid_t owner;
static int attached; /* the trace starts at a churn attach */

void churn_outfile_attached(void)
{
    attached = 1;
}
static dev_t file_dev;
static ino_t file_ino;
static uint64_t write_at, ring_bytes, seq;
static uint64_t data_start; /* after the file header and the producer frame */
/* The open segment's place once a checkpoint has put it in the file (NO_PLACE: not yet), and
   how many bytes of its frame are there. */
#define NO_PLACE UINT64_MAX
static uint64_t open_at = NO_PLACE;
static size_t open_written;
static uint32_t open_crc; /* of those bytes: each checkpoint and the close add only theirs */
_Static_assert(sizeof(churn_open_segment_header) == sizeof(churn_segment_header),
               "the closed header is written over the open one");
/* 0, or the failure already reported on stderr: each is said once. */
static enum { FAILING = 1, OUT_OF_SPACE } write_failed;
/* The ring was cut to what the disk holds: a segment too big for it is a full disk's loss,
   not CHURN_RING_MB's. */
static int cut_by_disk;

int churn_outfile_open(const char *path, int events)
{
    struct stat st;
    if (!lstat(path, &st)) {
        if (!S_ISREG(st.st_mode)) {
            churn_log("%s exists and is not a regular file (a symlink?); not tracing", path);
            return -1;
        }
        unlink(path);
    }
    churn_fd_keep(&fd, open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (fd < 0 || fstat(fd, &st)) {
        churn_log("cannot create %s: %s; not tracing", path, strerror(errno));
        churn_fd_drop(&fd);
        return -1;
    }
    snprintf(path_now, sizeof path_now, "%s", path);
    gone = 0;
    file_dev = st.st_dev;
    file_ino = st.st_ino;
    owner = getpid();
    ring_bytes = churn_opt.ring_bytes;
    seq = 0;
    open_at = NO_PLACE;
    open_written = 0;
    write_failed = 0;
    cut_by_disk = 0;
    churn_file_header h;
    memset(&h, 0, sizeof h);
    h.frame_magic = CHURN_SKIPPABLE_MAGIC;
    h.frame_size = sizeof h - 8;
    memcpy(h.magic, CHURN_FILE_MAGIC, 8);
    h.version = CHURN_FORMAT_VERSION;
    h.flags = (events ? CHURN_FILE_EVENTS : 0) | (attached ? CHURN_FILE_ATTACHED : 0);
    h.ring_bytes = ring_bytes;
    h.pid = (uint64_t)getpid();
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    h.start_realtime_ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
    h.page_size = (uint32_t)sysconf(_SC_PAGESIZE);
    h.header_crc = churn_file_header_crc(&h);
    if (pwrite(fd, &h, sizeof h, 0) != (ssize_t)sizeof h) {
        churn_log("cannot write %s: %s; not tracing", path, strerror(errno));
        churn_fd_drop(&fd);
        owner = 0;
        return -1;
    }
    churn_producer_frame p;
    memset(&p, 0, sizeof p);
    p.frame_magic = CHURN_SKIPPABLE_MAGIC;
    p.frame_size = sizeof p - 8;
    memcpy(p.magic, CHURN_PRODUCER_MAGIC, 8);
    memcpy(p.version, CHURN_VERSION, sizeof CHURN_VERSION);
    p.crc = churn_producer_frame_crc(&p);
    if (pwrite(fd, &p, sizeof p, sizeof h) != (ssize_t)sizeof p) {
        churn_log("cannot write %s: %s; not tracing", path, strerror(errno));
        churn_fd_drop(&fd);
        owner = 0;
        return -1;
    }
    write_at = data_start = sizeof h + sizeof p;
    return 0;
}

uint64_t churn_outfile_next_seq(void) { return seq; }

uint64_t churn_outfile_ring_room(void)
{
    return ring_bytes > data_start ? ring_bytes - data_start : 0;
}

/* The trace's descriptor for one system call, held against a move (fds.c) until release; -1
   when the trace is gone.  A program can still take the number over past libc (a raw dup2, a
   raw close and a new open), also between two writes of one segment: each call holds it anew,
   and the file is then opened again by its path, if that is still the trace's file, or the
   trace ends there, said once. */
static int hold(void)
{
    if (gone)
        return -1;
    /* taken again right after it was opened again: again, a few times */
    for (int tries = 0; tries < 8; tries++) {
        if ((cur = churn_fd_use(&fd)) >= 0)
            return 0;
        struct stat st;
        int again = open(path_now, O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
        if (again < 0 || fstat(again, &st) || st.st_dev != file_dev || st.st_ino != file_ino) {
            if (again >= 0)
                close(again);
            churn_log("the program took over the trace's file descriptor, and %s is no longer "
                      "the trace's file; the trace ends here",
                      path_now);
            break;
        }
        churn_fd_keep(&fd, again);
        if (tries == 7)
            churn_log("the program takes the trace's file descriptor over as soon as it is "
                      "opened again; the trace ends here");
    }
    gone = 1;
    churn_fd_drop(&fd);
    return -1;
}

static void release(void)
{
    churn_fd_done(&fd);
    cur = -1;
}

/* What the file can hold after a write at `at` failed, having written `wrote` bytes: the
   bytes it owns (up to its size, and what the short write added) and the space still free on
   its disk; and where the write stopped short of that, a limit of the file's own
   (RLIMIT_FSIZE), at what it owns. */
static uint64_t file_holds(uint64_t at, size_t wrote, int err)
{
    uint64_t owned = at + wrote;
    if (hold())
        return owned;
    struct stat st;
    if (!fstat(cur, &st) && (uint64_t)st.st_size > owned)
        owned = (uint64_t)st.st_size;
    struct statvfs v;
    uint64_t holds = owned;
    if (!fstatvfs(cur, &v))
        holds += (uint64_t)v.f_bavail * v.f_frsize;
    release();
    return wrote > 0 || err == EFBIG ? owned : holds;
}

/* A write past RLIMIT_FSIZE raises SIGXFSZ, by default fatal, and the last segment is written
   on the program's thread: the write is made with SIGXFSZ blocked, and a SIGXFSZ it made is
   taken back (one pending before is the program's). */
static ssize_t write_no_sigxfsz(const void *buf, size_t len, off_t at)
{
    sigset_t xfsz, old, pending;
    sigemptyset(&xfsz);
    sigaddset(&xfsz, SIGXFSZ);
    pthread_sigmask(SIG_BLOCK, &xfsz, &old);
    int was_pending = !sigpending(&pending) && sigismember(&pending, SIGXFSZ);
    ssize_t n = -1;
    int err = EBADF;
    /* A write that found the number closed under it goes again through the file
       opened again; so does one whose number the program took over past libc between the
       check (hold) and the write, which may have gone to the program's file: the trace is
       never short of it. */
    for (int tries = 0; tries < 4 && err == EBADF && !hold(); tries++) {
        n = pwrite(cur, buf, len, at);
        err = n < 0 ? errno : 0;
        struct stat st;
        if (n >= 0 && (fstat(cur, &st) || st.st_dev != file_dev || st.st_ino != file_ino)) {
            n = -1;
            err = EBADF;
        }
        release();
    }
    if (n < 0 && err == EFBIG && !was_pending) {
        struct timespec zero = {0, 0};
        sigtimedwait(&xfsz, NULL, &zero);
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    errno = err;
    return n;
}

/* Writes len bytes at `at`, going on after a short write (cut by a signal, or the next call
   says why not); returns the bytes written, with *err 0 when all were, else why not. */
static size_t write_all(const void *buf, size_t len, uint64_t at, int *err)
{
    size_t done = 0;
    *err = 0;
    while (done < len) {
        ssize_t n = write_no_sigxfsz((const uint8_t *)buf + done, len - done, (off_t)(at + done));
        if (n <= 0) {
            *err = n < 0 ? errno : ENOSPC;
            break;
        }
        done += (size_t)n;
    }
    return done;
}

pid_t churn_outfile_pid(void)
{
    return owner;
}

/* The open header at open_at no longer describes what the trace will hold (the segment was
   written elsewhere, or lost): zeros over it, so that a reader never takes it. */
static void forget_open(void)
{
    static const uint8_t zero[sizeof(churn_open_segment_header)];
    int err;
    if (open_at != NO_PLACE && open_written)
        write_all(zero, sizeof zero, open_at, &err);
    open_at = NO_PLACE;
    open_written = 0;
    open_crc = 0;
}

int churn_outfile_checkpoint(const void *zstd_frame, size_t zbytes, uint32_t raw_bytes,
                             uint64_t first_epoch, uint64_t now_ns, uint64_t reserve)
{
    if (!owner || gone)
        return -1;
    size_t hdr = sizeof(churn_open_segment_header);
    if (open_at == NO_PLACE) {
        uint64_t room = churn_outfile_ring_room();
        if (reserve > room)
            reserve = room;
        open_at = write_at + reserve > ring_bytes ? data_start : write_at;
        open_written = 0;
        open_crc = 0;
    }
    /* Grown past the end of the ring from its place: its close places it as any segment. */
    if (open_at + hdr + zbytes > ring_bytes || zbytes < open_written)
        return -1;
    int err;
    size_t more = zbytes - open_written;
    size_t wrote = write_all((const uint8_t *)zstd_frame + open_written, more,
                             open_at + hdr + open_written, &err);
    if (wrote != more)
        return -1;
    open_crc = churn_crc32(open_crc, (const uint8_t *)zstd_frame + open_written, more);
    open_written = zbytes;
    churn_open_segment_header h;
    memset(&h, 0, sizeof h);
    h.frame_magic = CHURN_SKIPPABLE_MAGIC;
    h.frame_size = sizeof h - 8;
    h.magic = CHURN_SEGMENT_OPEN_MAGIC | (churn_enc.key ? 0 : CHURN_SEGMENT_DELTA);
    h.version = CHURN_FORMAT_VERSION;
    h.seq = seq;
    h.first_epoch = first_epoch;
    h.checkpoint_ns = now_ns;
    h.raw_bytes = raw_bytes;
    h.zstd_bytes = (uint32_t)zbytes;
    h.payload_crc = open_crc;
    h.header_crc = churn_open_segment_header_crc(&h);
    return write_all(&h, sizeof h, open_at, &err) == sizeof h ? 0 : -1;
}

/* The caller leaves sizeof(churn_segment_header) bytes free in front of the zstd frame, so a
   segment that no checkpoint placed is written with a single call. */
int churn_outfile_write_segment(const void *zstd_frame, size_t zbytes, uint32_t raw_bytes,
                                uint64_t first_epoch, uint64_t last_epoch)
{
    if (!owner || gone) {
        open_at = NO_PLACE;
        return CHURN_OUTFILE_FAILED;
    }
    churn_segment_header *h = (churn_segment_header *)((uint8_t *)zstd_frame - sizeof *h);
    size_t total = sizeof *h + zbytes;
    if (total > churn_outfile_ring_room()) {
        forget_open();
        return cut_by_disk ? CHURN_OUTFILE_FAILED : CHURN_OUTFILE_TOO_BIG;
    }
    memset(h, 0, sizeof *h);
    h->frame_magic = CHURN_SKIPPABLE_MAGIC;
    h->frame_size = sizeof *h - 8;
    h->magic = CHURN_SEGMENT_MAGIC | (churn_enc.key ? 0 : CHURN_SEGMENT_DELTA);
    h->version = CHURN_FORMAT_VERSION;
    h->seq = seq;
    h->first_epoch = first_epoch;
    h->last_epoch = last_epoch;
    /* Where a checkpoint put it, the rest of the frame first, then the header: a kill between
       the two leaves the last checkpoint's header counting bytes still there. */
    int placed = open_at != NO_PLACE && open_written && open_at + total <= ring_bytes;
    h->raw_bytes = raw_bytes;
    h->zstd_bytes = (uint32_t)zbytes;
    h->payload_crc = placed ? churn_crc32(open_crc, (const uint8_t *)zstd_frame + open_written,
                                          zbytes - open_written)
                            : churn_crc32(0, zstd_frame, zbytes);
    h->header_crc = churn_segment_header_crc(h);
    uint64_t at = placed ? open_at : write_at + total > ring_bytes ? data_start : write_at;
    size_t from = placed ? sizeof *h + open_written : 0;
    int err;
    size_t n = from + write_all((const uint8_t *)h + from, total - from, at + from, &err);
    if (n == total && placed)
        n = write_all(h, sizeof *h, at, &err) == sizeof *h ? total : 0;
    if (n != total) {
        forget_open();
        /* Out of space: the ring is cut to what the disk holds and the next segment, which
           the writer sizes to fit it, wraps to the start and overwrites the oldest ones.
           That next segment says how many events this one dropped; without the cut no later
           write would fit either and the trace would end without saying so. */
        int no_space = err == ENOSPC || err == EDQUOT || err == EFBIG;
        uint64_t holds = no_space ? file_holds(at, n, err) : ring_bytes;
        if (holds < ring_bytes) {
            uint64_t was = ring_bytes;
            ring_bytes = holds > data_start ? holds : data_start;
            cut_by_disk = 1;
            write_at = data_start;
            if (!write_failed)
                churn_log("writing the trace failed (%s): the ring file is cut from %llu KiB "
                          "to the %llu KiB the disk (or the file size limit) lets it hold, "
                          "overwriting its oldest segments; this segment's events are dropped "
                          "and counted in the trace",
                          strerror(err), (unsigned long long)(was >> 10),
                          (unsigned long long)(ring_bytes >> 10));
        } else if (!write_failed) {
            churn_log("writing the trace failed (%s); dropping data until it works again",
                      strerror(err));
        }
        /* After running out of space, writing on in the cut ring is the expected state, not a
           recovery worth a second line. */
        if (!write_failed)
            write_failed = no_space ? OUT_OF_SPACE : FAILING;
        return CHURN_OUTFILE_FAILED;
    }
    /* Its closed header is over the open one; or it was written elsewhere (it outgrew its
       place), and the open header there is stale unless the segment was written over it. */
    if (placed || (open_at != NO_PLACE && open_at < at + total && open_at + sizeof *h > at))
        open_at = NO_PLACE;
    forget_open();
    if (write_failed == FAILING) {
        churn_log("writing the trace works again");
        write_failed = 0;
    }
    write_at = at + total;
    seq++;
    return 0;
}

void churn_outfile_close(void)
{
    churn_fd_drop(&fd);
    owner = 0;
}
