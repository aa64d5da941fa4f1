/* The one version string of libchurn: `churn --version`, `churn-analyze --version`, the
   reports and the man pages print it. */
#ifndef CHURN_VERSION_H
#define CHURN_VERSION_H

#define CHURN_VERSION "0.1.0"

#endif
