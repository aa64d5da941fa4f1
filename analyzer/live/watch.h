/*
 * `churn watch TRACE|PID`: a terminal view of a running process, refreshed every interval:
 * the process, its epochs, RSS and its parts with a sparkline each, and the functions that
 * grow most, as the analyzer ranks them; a last line when the process ends.  Plain
 * terminal escapes (it works over ssh), `q` quits.  Without a terminal it prints one line
 * per interval instead, for logs.
 */
#ifndef CHURN_LIVE_WATCH_H
#define CHURN_LIVE_WATCH_H

/* argv[0] is "watch"; returns the exit status (0, 1 for a trace that cannot be followed,
   2 for bad usage). */
int churn_watch_main(int argc, char **argv);

#endif
