/* SPDX-License-Identifier: MIT */
/* Runs txattn-scan on one plugin file and turns what happened into a verdict. The scanner is found
 * beside libtxattn.so ("<libdir>/txattn/txattn-scan", the build tree mirroring the install), else
 * at the compiled-in install path. posix_spawn, not fork: the caller may be threaded. The child
 * gets /dev/null for stdin and stderr, a pipe for stdout (a plugin that prints is faulty: in a
 * program it would write into the program's output), the verdict pipe as fd 3, no other
 * descriptor, default signal dispositions and mask, and a small fixed environment. It leads a
 * process group of its own, and the whole group is killed when it ends or times out: a plugin that
 * forks leaves nothing behind. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "scan/scan_protocol.h"
#include "error.h"
#include "scan/scan_spawn.h"

static const char anchor = 0; /* an address inside libtxattn.so, for dladdr */

/* "<dir of libtxattn.so>/txattn/txattn-scan" if it is executable, else the install path. */
static void scanner_path(char *out, size_t size) {
  Dl_info info;
  if (dladdr(&anchor, &info) != 0 && info.dli_fname != NULL) {
    const char *slash = strrchr(info.dli_fname, '/');
    if (slash)
      snprintf(out, size, "%.*s/%s", (int)(slash - info.dli_fname), info.dli_fname,
               TXATTN_SCANNER_SUBPATH);
    else
      snprintf(out, size, "./%s", TXATTN_SCANNER_SUBPATH);
    if (access(out, X_OK) == 0) return;
  }
  snprintf(out, size, "%s", TXATTN_SCANNER_INSTALL_ABS);
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef struct child {
  pid_t pid;
  int verdict, out; /* our ends of the pipes, -1 once at end of file */
  char buf[2048];
  size_t len;
  int ready; /* the scanner said it started */
  char at[768], last[768];
  size_t printed; /* bytes the child wrote to its stdout */
  char sample[48];
} child;

static int spawn(child *c, const char *exe, const char *path, unsigned isa_mask,
                 char *const *extra) {
  int vp[2], op[2];
  if (pipe2(vp, O_CLOEXEC) != 0) return errno;
  if (pipe2(op, O_CLOEXEC) != 0) {
    int e = errno;
    close(vp[0]);
    close(vp[1]);
    return e;
  }
  /* the child's ends above fd 3, so that no dup2 below is a no-op that keeps FD_CLOEXEC */
  int vw = fcntl(vp[1], F_DUPFD_CLOEXEC, 10), ow = fcntl(op[1], F_DUPFD_CLOEXEC, 10);
  close(vp[1]);
  close(op[1]);
  char mask[16];
  snprintf(mask, sizeof mask, "%x", isa_mask);
  char *argv[TXATTN__SCAN_MAX_ARGS + 4] = {(char *)exe, mask, (char *)path, NULL};
  for (size_t i = 0; extra && extra[i] && i < TXATTN__SCAN_MAX_ARGS; i++) argv[3 + i] = extra[i];
  /* OpenMP threads sleep when idle; the sanitizers of a sanitizer build leave faults to us */
  char *env[] = {
      "LC_ALL=C",
      "OMP_WAIT_POLICY=passive",
      "ASAN_OPTIONS=handle_segv=0:handle_sigbus=0:handle_sigill=0:handle_sigfpe=0:handle_abort=0:"
      "detect_leaks=0:allow_user_segv_handler=1",
      "UBSAN_OPTIONS=print_stacktrace=0",
      NULL,
      NULL};
  char ld[PATH_MAX + 32];
  const char *ld_path = secure_getenv("LD_LIBRARY_PATH"); /* where the plugin's own libraries are */
  if (ld_path && strlen(ld_path) < PATH_MAX) {
    snprintf(ld, sizeof ld, "LD_LIBRARY_PATH=%s", ld_path);
    env[4] = ld;
  }
  posix_spawn_file_actions_t fa;
  posix_spawnattr_t attr;
  sigset_t all, none;
  sigfillset(&all);
  sigemptyset(&none);
  posix_spawn_file_actions_init(&fa);
  posix_spawnattr_init(&attr);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setflags(&attr,
                           POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETPGROUP);
  posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, ow, STDOUT_FILENO);
  posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, vw, TXATTN_SCAN_VERDICT_FD);
  posix_spawn_file_actions_addclosefrom_np(&fa, TXATTN_SCAN_VERDICT_FD + 1);
  int rc = (vw < 0 || ow < 0) ? EMFILE : posix_spawn(&c->pid, exe, &fa, &attr, argv, env);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  if (vw >= 0) close(vw);
  if (ow >= 0) close(ow);
  c->verdict = vp[0];
  c->out = op[0];
  if (rc != 0) {
    close(vp[0]);
    close(op[0]);
    c->verdict = c->out = -1;
  }
  return rc;
}

static void take_lines(child *c) {
  char *nl;
  while ((nl = memchr(c->buf, '\n', c->len)) != NULL) {
    *nl = '\0';
    if (strcmp(c->buf, TXATTN_SCAN_READY) == 0)
      c->ready = 1;
    else if (strncmp(c->buf, "at ", 3) == 0)
      snprintf(c->at, sizeof c->at, "%.760s", c->buf + 3);
    else
      snprintf(c->last, sizeof c->last, "%.760s", c->buf);
    size_t used = (size_t)(nl - c->buf) + 1;
    memmove(c->buf, nl + 1, c->len - used);
    c->len -= used;
  }
  if (c->len == sizeof c->buf) c->len = 0; /* a line longer than any the scanner writes */
}

/* Reads both pipes until both end or the deadline; 0 if the deadline came first. */
static int read_until_end(child *c, double deadline) {
  while (c->verdict >= 0 || c->out >= 0) {
    double left = deadline - now();
    if (left <= 0) return 0;
    struct pollfd p[2] = {{.fd = c->verdict, .events = POLLIN}, {.fd = c->out, .events = POLLIN}};
    int got = poll(p, 2, (int)(left * 1000) + 1);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return 0;
    if (c->verdict >= 0 && (p[0].revents & (POLLIN | POLLHUP | POLLERR))) {
      ssize_t n = read(c->verdict, c->buf + c->len, sizeof c->buf - c->len);
      if (n > 0) {
        c->len += (size_t)n;
        take_lines(c);
      } else if (n == 0 || errno != EINTR) {
        close(c->verdict);
        c->verdict = -1;
      }
    }
    if (c->out >= 0 && (p[1].revents & (POLLIN | POLLHUP | POLLERR))) {
      char junk[512];
      ssize_t n = read(c->out, junk, sizeof junk);
      if (n > 0) {
        for (ssize_t i = 0; i < n && c->printed + (size_t)i < sizeof c->sample - 1; i++)
          c->sample[c->printed + (size_t)i] = (junk[i] >= 0x20 && junk[i] < 0x7f) ? junk[i] : '.';
        c->printed += (size_t)n;
      } else if (n == 0 || errno != EINTR) {
        close(c->out);
        c->out = -1;
      }
    }
  }
  return 1;
}

/* The child's wait status, waiting at most until the deadline (then it is killed, *hung); -1 if it
   cannot be had (a caller that ignores SIGCHLD has its children reaped for it). Either way its
   process group is killed before the child is reaped (so that its id, the group's, is still
   taken): whatever its plugin forked ends with it. */
static int reap(pid_t pid, double deadline, int *hung) {
  for (;;) {
    siginfo_t info;
    memset(&info, 0, sizeof info);
    int r = waitid(P_PID, (id_t)pid, &info, WEXITED | WNOHANG | WNOWAIT);
    if (r == 0 && info.si_pid == pid) break; /* ended, a zombie until reaped below */
    if (r < 0 && errno != EINTR) {
      kill(-pid, SIGKILL);
      return -1;
    }
    if (now() >= deadline) {
      *hung = 1;
      break;
    }
    struct timespec nap = {0, 1000000};
    nanosleep(&nap, NULL);
  }
  kill(-pid, SIGKILL);
  int st;
  while (waitpid(pid, &st, 0) < 0)
    if (errno != EINTR) return -1;
  return st;
}

/* "in run() of x.avx2 on ..." or "while loading it (its constructors)" */
static void where(const child *c, char *out, size_t size) {
  if (c->last[0] != '\0' && strncmp(c->last, "ok", 2) == 0)
    snprintf(out, size, "after its kernels ran (while unloading it)");
  else if (strncmp(c->at, "loading", 7) == 0)
    snprintf(out, size, "while loading it (its constructors)");
  else if (c->at[0] != '\0')
    snprintf(out, size, "in %s", c->at);
  else
    snprintf(out, size, "before loading it");
}

/* Runs the scanner with the extra arguments (NULL: a scan) and waits for it: the child's lines,
   output and wait status in *c, *st and *hung; 0, or the errno when it could not be started. */
static int run_scanner(const char *path, unsigned isa_mask, char *const *extra, double timeout_s,
                       child *c, int *st, int *hung, char *exe, size_t exe_size) {
  scanner_path(exe, exe_size);
  memset(c, 0, sizeof *c);
  c->verdict = c->out = -1;
  int rc = spawn(c, exe, path, isa_mask, extra);
  if (rc != 0) return rc;
  double deadline = now() + timeout_s;
  int ended = read_until_end(c, deadline);
  *hung = 0;
  *st = reap(c->pid, ended ? deadline : now(), hung);
  if (c->verdict >= 0) close(c->verdict);
  if (c->out >= 0) close(c->out);
  return 0;
}

txattn__scan_result txattn__scan_spawn(const char *path, unsigned isa_mask, double timeout_s,
                                       char *why, size_t size) {
  char exe[PATH_MAX];
  child c;
  int st, hung;
  int rc = run_scanner(path, isa_mask, NULL, timeout_s, &c, &st, &hung, exe, sizeof exe);
  if (rc != 0) {
    snprintf(why, size, "cannot start the plugin scanner %s: %s", exe, strerror(rc));
    return TXATTN__SCAN_UNAVAILABLE;
  }
  char at[800];
  where(&c, at, sizeof at);
  if (!c.ready && !hung) {
    snprintf(why, size, "the plugin scanner %s did not start (wait status 0x%x)", exe,
             (unsigned)st);
    return TXATTN__SCAN_UNAVAILABLE;
  }
  if (hung) {
    snprintf(why, size, "no answer within %g s (%s)", timeout_s, at);
    return TXATTN__SCAN_FAULTY;
  }
  if (strncmp(c.last, "bad ", 4) == 0) {
    snprintf(why, size, "%s", c.last + 4);
    return TXATTN__SCAN_FAULTY;
  }
  if (st != -1 && WIFSIGNALED(st)) {
    const char *name = sigdescr_np(WTERMSIG(st));
    snprintf(why, size, "killed by signal %d (%s) %s", WTERMSIG(st), name ? name : "?", at);
    return TXATTN__SCAN_FAULTY;
  }
  int done = strncmp(c.last, "ok ", 3) == 0 || strncmp(c.last, "declined ", 9) == 0;
  if (st != -1 && WIFEXITED(st) && (WEXITSTATUS(st) != 0 || !done)) {
    snprintf(why, size, "exit(%d) %s", WEXITSTATUS(st), at);
    return TXATTN__SCAN_FAULTY;
  }
  if (!done) {
    snprintf(why, size, "the scanner ended without a verdict %s", at);
    return TXATTN__SCAN_FAULTY;
  }
  if (c.printed > 0) {
    snprintf(why, size, "printed %zu bytes to stdout (\"%s\")", c.printed, c.sample);
    return TXATTN__SCAN_FAULTY;
  }
  if (strncmp(c.last, "declined ", 9) == 0) {
    snprintf(why, size, "%s", c.last + 9);
    return TXATTN__SCAN_DECLINED;
  }
  return TXATTN__SCAN_OK;
}

/* The check request's arguments (scan_protocol.h) in buf, pointed to by argv (NULL-terminated);
   0 if they do not fit. */
static int trial_args(const txattn_kernel_info *k, const txattn_problem *p,
                      const char *const *names, const int64_t *values, size_t n, int n_threads,
                      int compare, char *buf, size_t size, char **argv) {
  size_t used = 0, a = 0;
#define ARG(...)                                                                                   \
  do {                                                                                             \
    int len_ = snprintf(buf + used, size - used, __VA_ARGS__);                                     \
    if (len_ < 0 || (size_t)len_ >= size - used || a + 1 >= TXATTN__SCAN_MAX_ARGS) return 0;       \
    argv[a++] = buf + used;                                                                        \
    used += (size_t)len_ + 1;                                                                      \
  } while (0)
  ARG("check");
  ARG("%s", k->name);
  ARG("%d", n_threads);
  ARG("%d", compare != 0);
#define PUT_INT(x)   ARG(#x "=%lld", (long long)p->x);
#define PUT_FLOAT(x) ARG(#x "=%a", (double)p->x);
  TXATTN_SCAN_PROBLEM_FIELDS(PUT_INT, PUT_FLOAT)
#undef PUT_INT
#undef PUT_FLOAT
  for (size_t i = 0; i < n; i++) ARG("tunable.%s=%lld", names[i], (long long)values[i]);
#undef ARG
  argv[a] = NULL;
  return 1;
}

txattn_status txattn__scan_trial(const txattn_kernel_info *kernel, const txattn_problem *p,
                                 const char *const *names, const int64_t *values, size_t n,
                                 int n_threads, txattn_trial *t) {
  const txattn_kernel_info k = *kernel;
  txattn_problem q = TXATTN_PROBLEM_INIT;
  TXATTN_FORWARD_IF_ERROR(txattn_problem_resolve(p, &q));
  TXATTN_RETURN_IF(q.page_size || q.packed, TXATTN_E_UNSUPPORTED,
                   "txattn_kernel_trial: paged K/V and packed queries are not tried");
  char buf[8192], *argv[TXATTN__SCAN_MAX_ARGS], exe[PATH_MAX];
  TXATTN_RETURN_IF(
      !trial_args(&k, &q, names, values, n, n_threads, t->compare, buf, sizeof buf, argv),
      TXATTN_E_INVALID, "txattn_kernel_trial: too many or too long tunables");
  double timeout = t->timeout_s > 0 ? t->timeout_s : 60;
  size_t keep = offsetof(txattn_trial, outcome);
  memset((char *)t + keep, 0, sizeof *t - keep);
  t->error = t->bound = -1;
  child c;
  int st, hung;
  int rc = run_scanner(k.path, ~0u, argv, timeout, &c, &st, &hung, exe, sizeof exe);
  char *last = c.last;
  int at = 0;
  if (rc != 0 || (!c.ready && !hung)) {
    t->outcome = TXATTN_TRIAL_UNAVAILABLE;
    snprintf(t->why, sizeof t->why, "the plugin scanner %.200s did not start: %.200s", exe,
             rc ? strerror(rc) : "it ended first");
  } else if (hung) {
    t->outcome = TXATTN_TRIAL_HUNG;
    snprintf(t->why, sizeof t->why, "no answer within %g s", timeout);
  } else if (st != -1 && WIFSIGNALED(st)) {
    t->outcome = TXATTN_TRIAL_CRASHED;
    t->signal = WTERMSIG(st);
    const char *name = sigdescr_np(t->signal);
    snprintf(t->why, sizeof t->why, "signal %d (%s)", t->signal, name ? name : "?");
  } else if (c.printed > 0) {
    t->outcome = TXATTN_TRIAL_PRINTED;
    t->printed = c.printed;
    snprintf(t->why, sizeof t->why, "%s", c.sample);
  } else if (sscanf(last, "ran %la %la %la", &t->seconds, &t->error, &t->bound) == 3) {
    t->outcome = TXATTN_TRIAL_RAN;
  } else if (sscanf(last, "inexact %la %la %la %n", &t->seconds, &t->error, &t->bound, &at) == 3 &&
             at > 0) {
    t->outcome = TXATTN_TRIAL_INEXACT;
    snprintf(t->why, sizeof t->why, "%.500s", last + at);
  } else if (sscanf(last, "failed %d %n", &rc, &at) == 1 && at > 0) {
    t->outcome = TXATTN_TRIAL_FAILED;
    t->status = (txattn_status)rc;
    snprintf(t->why, sizeof t->why, "%.500s", last + at);
  } else if (sscanf(last, "outside %zu %zu", &t->after, &t->before) == 2 ||
             strncmp(last, "bad ", 4) == 0) {
    t->outcome = TXATTN_TRIAL_OUTSIDE;
    snprintf(t->why, sizeof t->why, "%.500s", last[0] == 'b' ? last + 4 : "its output");
  } else if (strncmp(last, "declined ", 9) == 0) {
    t->outcome = TXATTN_TRIAL_DECLINED;
    snprintf(t->why, sizeof t->why, "%.500s", last + 9);
  } else {
    t->outcome = TXATTN_TRIAL_CRASHED; /* ended without its last line: exit() or _exit() */
    t->exit_status = st != -1 && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    snprintf(t->why, sizeof t->why, "exit status %d", t->exit_status);
  }
  return TXATTN_OK;
}
