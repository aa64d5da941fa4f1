/*
 * `churn serve [--listen ADDR:PORT] PATH...`: a sidecar that follows the traces PATHs name
 * (a trace, a tree's index, a directory of traces; new images and files as they appear) and
 * serves, over HTTP, what a fleet's tools already scrape: /debug/pprof/heap and
 * /debug/pprof/allocs (Go's pprof, ?pid=, ?seconds=N), /metrics (Prometheus) and / (an
 * index).  The HTTP side is GNU libmicrohttpd's (docs/design.md says why): a connection
 * limit, a per-address limit, an idle timeout and a bound on a request's headers; nothing is
 * writable, and only GET and HEAD are answered.  It listens on the loopback address unless
 * told another.
 *
 * One thread follows every trace (follow.h) and answers the handlers' requests for profiles
 * between its reads; the handlers read the newest views it made.  A trace that cannot be
 * read answers its requests with an HTTP error, and the rest go on.
 */
#ifndef CHURN_LIVE_SERVE_H
#define CHURN_LIVE_SERVE_H

/* argv[0] is "serve"; returns the exit status (0 after SIGINT or SIGTERM, 1 when it cannot
   listen, 2 for bad usage). */
int churn_serve_main(int argc, char **argv);

#endif
