/* SPDX-License-Identifier: MIT */
/* txtune profile: the exactness checks in a child process (profile_isolate.h). POSIX; the child's
   program is found through Linux's /proc/self/exe. */
#define _GNU_SOURCE /* strsignal */
#include "profile_isolate.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "args.h"
#include "buffers.h"
#include "timing.h"

extern char **environ;

/* The child's first line, once its library is loaded: before it, a child that dies or does not
   answer within the timeout was never a checker (it could not be started), and the checks run in
   the profile's process. A check shape is small (PROF_CHECK_N): even the naive kernel under an
   emulator checks it in well under a second. */
#define READY_LINE "txtune-check-server 1"

/* The child's descriptors: requests on stdin, answers on ANSWER_FD; its stdout is a pipe of its
   own that the profile watches, so that a kernel that prints can neither garble an answer nor go
   unnoticed (the plugin ABI forbids printing). */
#define ANSWER_FD 3

struct prof_isolation {
  char *plugin_path;
  pid_t pid;    /* 0: no child */
  int to, from; /* the child's stdin and its answers */
  int out;      /* the child's stdout */
  int unusable; /* no child could be started: every check runs in the profile's process */
  int started;  /* a child has started once: a later one that does not is no reason for that */
  char buf[1024];
  size_t len;           /* bytes of an unfinished line in buf */
  size_t printed;       /* bytes the child wrote on its stdout since the last check began */
  char print_text[100]; /* the first of them */
  struct sigaction old_pipe;
};

prof_isolation *prof_isolation_new(const char *plugin_path) {
  prof_isolation *iso = calloc(1, sizeof *iso);
  if (!iso) return NULL;
  iso->to = iso->from = iso->out = -1;
  if (plugin_path && !(iso->plugin_path = strdup(plugin_path))) {
    free(iso);
    return NULL;
  }
  /* a write to a child that just died must fail with EPIPE, not end txtune */
  struct sigaction ign;
  memset(&ign, 0, sizeof ign);
  ign.sa_handler = SIG_IGN;
  sigemptyset(&ign.sa_mask);
  sigaction(SIGPIPE, &ign, &iso->old_pipe);
  return iso;
}

/* Closes the pipes and reaps the child; *status gets its wait status (-1 if none). */
static void stop_child(prof_isolation *iso, int kill_it, int *status) {
  if (iso->to >= 0) close(iso->to);
  if (iso->from >= 0) close(iso->from);
  if (iso->out >= 0) close(iso->out);
  iso->to = iso->from = iso->out = -1;
  iso->len = 0;
  int st = -1;
  if (iso->pid > 0) {
    if (kill_it) kill(iso->pid, SIGKILL);
    while (waitpid(iso->pid, &st, 0) < 0 && errno == EINTR) {
    }
  }
  iso->pid = 0;
  if (status) *status = st;
}

void prof_isolation_free(prof_isolation *iso) {
  if (!iso) return;
  stop_child(iso, 0, NULL); /* its stdin closed, the child ends its loop */
  sigaction(SIGPIPE, &iso->old_pipe, NULL);
  free(iso->plugin_path);
  free(iso);
}

/* Reads what the child wrote on its stdout (non-blocking), keeping the count and the first bytes. */
static void drain_stdout(prof_isolation *iso) {
  char junk[4096];
  ssize_t r;
  while (iso->out >= 0 &&
         ((r = read(iso->out, junk, sizeof junk)) > 0 || (r < 0 && errno == EINTR))) {
    if (r <= 0) continue;
    size_t have = strlen(iso->print_text);
    if (iso->printed == 0 || have + 1 < sizeof iso->print_text) {
      size_t room = sizeof iso->print_text - 1 - have;
      size_t take = (size_t)r < room ? (size_t)r : room;
      memcpy(iso->print_text + have, junk, take);
      iso->print_text[have + take] = '\0';
    }
    iso->printed += (size_t)r;
  }
}

/* Reads one line from the child within timeout_s: 1 a line (in line, no newline), 0 end of file,
   -1 timeout or error. What the child prints meanwhile is drained (drain_stdout). */
static int read_line(prof_isolation *iso, double timeout_s, char *line, size_t size) {
  double deadline = tx_clock() + timeout_s;
  for (;;) {
    char *nl = memchr(iso->buf, '\n', iso->len);
    if (nl) {
      size_t n = (size_t)(nl - iso->buf);
      snprintf(line, size, "%.*s", (int)n, iso->buf);
      memmove(iso->buf, nl + 1, iso->len - n - 1);
      iso->len -= n + 1;
      return 1;
    }
    if (iso->len == sizeof iso->buf) return -1; /* a line longer than any answer */
    double left = deadline - tx_clock();
    if (left <= 0) return -1;
    struct pollfd p[2] = {{.fd = iso->from, .events = POLLIN}, {.fd = iso->out, .events = POLLIN}};
    int got = poll(p, iso->out >= 0 ? 2 : 1, (int)ceil(left * 1000));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return -1;
    if (iso->out >= 0 && p[1].revents) {
      drain_stdout(iso);
      if (p[1].revents & (POLLHUP | POLLERR | POLLNVAL)) { /* closed: watch it no more */
        close(iso->out);
        iso->out = -1;
      }
    }
    if (!p[0].revents) continue;
    ssize_t r = read(iso->from, iso->buf + iso->len, sizeof iso->buf - iso->len);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return 0;
    iso->len += (size_t)r;
  }
}

/* The child's environment: the profile's, with OpenMP's threads told to sleep as soon as a region
   ends. By default libgomp's threads spin a while first, and the child's did so right when the
   profile began to time the candidates it had just checked ("The check process's spinning
   threads", docs/measurements.md). */
static char **child_environment(void) {
  size_t n = 0;
  while (environ[n]) n++;
  char **env = malloc((n + 2) * sizeof *env);
  if (!env) return NULL;
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    if (strncmp(environ[i], "OMP_WAIT_POLICY=", 16) != 0 &&
        strncmp(environ[i], "GOMP_SPINCOUNT=", 15) != 0)
      env[k++] = environ[i];
  env[k++] = "OMP_WAIT_POLICY=passive";
  env[k] = NULL;
  return env;
}

static void close_pipes(int (*fds)[2], int n) {
  for (int i = 0; i < n; i++) {
    close(fds[i][0]);
    close(fds[i][1]);
  }
}

/* Starts the child and waits up to timeout_s for its ready line. */
static int start_child(prof_isolation *iso, double timeout_s) {
  char exe[4096];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return -1;
  exe[n] = '\0';
  int fds[3][2]; /* its stdin, its answers, its stdout */
  for (int i = 0; i < 3; i++)
    if (pipe(fds[i]) != 0) {
      close_pipes(fds, i);
      return -1;
    }
  int *in = fds[0], *out = fds[1], *print = fds[2];
  /* the profile's ends must not leak into the child, nor block the profile */
  for (int i = 0; i < 3; i++) fcntl(fds[i][i == 0 ? 1 : 0], F_SETFD, FD_CLOEXEC);
  fcntl(print[0], F_SETFL, fcntl(print[0], F_GETFL) | O_NONBLOCK);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, in[0], STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&fa, print[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&fa, out[1], ANSWER_FD);
  char *argv[] = {exe, "__check-server", NULL, NULL, NULL};
  if (iso->plugin_path) {
    argv[2] = "--plugin-path";
    argv[3] = iso->plugin_path;
  }
  pid_t pid;
  char **env = child_environment();
  int rc = env ? posix_spawn(&pid, exe, &fa, NULL, argv, env) : -1;
  free(env);
  posix_spawn_file_actions_destroy(&fa);
  close(in[0]);
  close(out[1]);
  close(print[1]);
  if (rc != 0) {
    close(in[1]);
    close(out[0]);
    close(print[0]);
    return -1;
  }
  iso->pid = pid;
  iso->to = in[1];
  iso->from = out[0];
  iso->out = print[0];
  char line[256];
  if (read_line(iso, timeout_s, line, sizeof line) != 1 || strcmp(line, READY_LINE) != 0) {
    stop_child(iso, 1, NULL);
    return -1;
  }
  iso->started = 1;
  return 0;
}

/* What happened to a child that ended (wait status st) or was stopped while it ran p: on its
   check, or (timed) at a timed point. */
static prof_fault death(int st, int hung, double timeout_s, const txattn_problem *p, int timed,
                        char *why, size_t size) {
  const char *on = timed ? "at a timed point" : "on its check";
  if (hung) {
    snprintf(why, size, "hung (no answer within %.3g s) %s (n = %lld): stopped", timeout_s, on,
             (long long)p->n_kv);
    return PROF_FAULT_HUNG;
  }
  if (st >= 0 && WIFSIGNALED(st))
    snprintf(why, size, "crashed %s (n = %lld): signal %d (%s)", on, (long long)p->n_kv,
             WTERMSIG(st), strsignal(WTERMSIG(st)));
  else if (st >= 0 && WIFEXITED(st))
    snprintf(why, size, "crashed %s (n = %lld): exit status %d (it ended the process)", on,
             (long long)p->n_kv, WEXITSTATUS(st));
  else
    snprintf(why, size, "crashed %s (n = %lld): the check process was lost", on,
             (long long)p->n_kv);
  return PROF_FAULT_CRASHED;
}

/* The first line of what a kernel printed, as one printable line. */
static void printed_words(const prof_isolation *iso, char *why, size_t size) {
  char text[sizeof iso->print_text];
  snprintf(text, sizeof text, "%.*s", (int)strcspn(iso->print_text, "\n"), iso->print_text);
  for (char *c = text; *c; c++)
    if ((unsigned char)*c < 0x20 || (unsigned char)*c >= 0x7f || *c == '"') *c = '?';
  snprintf(why, size,
           "prints to stdout (%zu bytes on its check, the first: \"%s\"), which a kernel "
           "must not",
           iso->printed, text);
}

/* The request: threads, class, the problem (scale in hex, exact; the element types; ragged, whose
   lengths are prof_ragged_lens of n_kv), the kernel, its tunables. */
static int format_request(char *buf, size_t size, const char *verb, int threads, size_t cls,
                          const txattn_problem *p, const prof_cand *c) {
  int n = snprintf(buf, size,
                   "%s %d %zu %lld %lld %lld %lld %lld %lld %lld %d %lld %lld %a %d %d %d %d %d "
                   "%s %zu",
                   verb, threads, cls, (long long)p->batch, (long long)p->heads_q,
                   (long long)p->heads_kv, (long long)p->n_q, (long long)p->n_kv,
                   (long long)p->d_qk, (long long)p->d_v, (int)p->mask, (long long)p->window_left,
                   (long long)p->window_right, (double)p->scale, (int)p->q_type, (int)p->k_type,
                   (int)p->v_type, (int)p->o_type, p->ragged != 0, c->name, c->n_tun);
  for (size_t i = 0; i < c->n_tun && n > 0 && (size_t)n < size; i++)
    n += snprintf(buf + n, size - (size_t)n, " %s %lld", c->tun_names[i],
                  (long long)c->tun_values[i]);
  if (n > 0 && (size_t)n + 1 < size) {
    buf[n++] = '\n';
    buf[n] = '\0';
    return n;
  }
  return -1;
}

static int write_all(int fd, const char *s, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, s, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return -1;
    s += w;
    n -= (size_t)w;
  }
  return 0;
}

/* One request (verb "check" or "run") and its answer, as prof_isolated_check and
   prof_isolated_run describe them. */
static int ask(prof_isolation *iso, const char *verb, double timeout_s, int threads, size_t cls,
               const txattn_problem *small, const prof_cand *cand, double *err, prof_fault *fault,
               char *why, size_t why_size) {
  char req[2048], line[sizeof iso->buf];
  int timed = strcmp(verb, "run") == 0;
  int len = format_request(req, sizeof req, verb, threads, cls, small, cand);
  *fault = PROF_FAULT_NONE;
  if (iso->unusable || len < 0) return -2;
  if (iso->pid == 0 && start_child(iso, timeout_s) != 0) {
    if (iso->started) { /* it ran before: the time was short, not the child unusable */
      snprintf(why, why_size, "the check process did not start again within %.3g s", timeout_s);
      return -1;
    }
    iso->unusable = 1;
    return -2;
  }
  *err = NAN;
  drain_stdout(iso);
  iso->printed = 0;
  iso->print_text[0] = '\0';
  int got =
      write_all(iso->to, req, (size_t)len) == 0 ? read_line(iso, timeout_s, line, sizeof line) : 0;
  int verdict, at = 0;
  double e;
  drain_stdout(iso); /* the child flushes its stdout before it answers */
  int kind;
  if (got == 1 && sscanf(line, "%d %lf %d %n", &verdict, &e, &kind, &at) == 3 && at > 0 &&
      verdict >= -1 && verdict <= 1 && kind >= PROF_FAULT_NONE && kind < PROF_FAULT_COUNT_) {
    *err = e;
    snprintf(why, why_size, "%s", line + at);
    if (iso->printed > 0) {
      *err = NAN;
      *fault = PROF_FAULT_PRINTS;
      printed_words(iso, why, why_size);
      return 0;
    }
    *fault = verdict == 0 ? (kind == PROF_FAULT_NONE ? PROF_FAULT_INEXACT : (prof_fault)kind)
                          : PROF_FAULT_NONE;
    return verdict;
  }
  int st;
  stop_child(iso, 1, &st);
  *fault = death(st, got < 0, timeout_s, small, timed, why, why_size);
  return 0;
}

int prof_isolated_check(prof_isolation *iso, double timeout_s, int threads, size_t cls,
                        const txattn_problem *small, const prof_cand *cand, double *err,
                        prof_fault *fault, char *why, size_t why_size) {
  return ask(iso, "check", timeout_s, threads, cls, small, cand, err, fault, why, why_size);
}

int prof_isolated_run(prof_isolation *iso, double timeout_s, int threads, size_t cls,
                      const txattn_problem *p, const prof_cand *cand, prof_fault *fault, char *why,
                      size_t why_size) {
  double err;
  int v = ask(iso, "run", timeout_s, threads, cls, p, cand, &err, fault, why, why_size);
  if (v == 0 && *fault == PROF_FAULT_INEXACT) { /* the call failed: left to the timing */
    *fault = PROF_FAULT_NONE;
    return -1;
  }
  return v;
}

/* The library's own plugin directory, as the library finds it: "txattn/plugins" (the build tree
   mirrors the install) beside the libtxattn.so this program runs with, resolved. */
static int own_plugin_dir(char *out, size_t size) {
  Dl_info info;
  char dir[PATH_MAX];
  if (dladdr((void *)txattn_version_string, &info) == 0 || info.dli_fname == NULL) return 0;
  const char *slash = strrchr(info.dli_fname, '/');
  int n = snprintf(dir, sizeof dir, "%.*s/txattn/plugins",
                   slash ? (int)(slash - info.dli_fname) : 1, slash ? info.dli_fname : ".");
  return n > 0 && (size_t)n < sizeof dir && size >= PATH_MAX && realpath(dir, out) != NULL;
}

int prof_kernel_shipped(const txattn_kernel_info *k) {
  static const char *const names[] = {"naive",      "masked", "banded",
                                      "banded_omp", "tiled",  "tiled_omp"};
  int named = 0;
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    named |= k->plugin != NULL && strcmp(k->plugin, names[i]) == 0;
  char own[PATH_MAX], file[PATH_MAX];
  if (!named || k->path == NULL || !own_plugin_dir(own, sizeof own) ||
      realpath(k->path, file) == NULL)
    return 0;
  char *slash = strrchr(file, '/');
  if (!slash) return 0;
  *slash = '\0';
  return strcmp(file, own) == 0;
}

/* ---- the child ---- */

static int parse_request(char *line, int *run, int *threads, size_t *cls, txattn_problem *p,
                         char **kernel, const char **names, int64_t *values, size_t *n_tun) {
  long long v[11];
  int mask, at = 0, ty[4], ragged;
  double scale;
  memset(p, 0, sizeof *p);
  *run = strncmp(line, "run ", 4) == 0;
  if (!*run && strncmp(line, "check ", 6) != 0) return -1;
  if (sscanf(line,
             "%*s %d %zu %lld %lld %lld %lld %lld %lld %lld %d %lld %lld %lf %d %d %d %d %d %n",
             threads, cls, &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &mask, &v[7], &v[8],
             &scale, &ty[0], &ty[1], &ty[2], &ty[3], &ragged, &at) != 18 ||
      at == 0 || v[0] < 1 || v[0] > 4096)
    return -1;
  *p = (txattn_problem){.batch = v[0],
                        .heads_q = v[1],
                        .heads_kv = v[2],
                        .n_q = v[3],
                        .n_kv = v[4],
                        .d_qk = v[5],
                        .d_v = v[6],
                        .mask = (txattn_mask)mask,
                        .window_left = v[7],
                        .window_right = v[8],
                        .scale = (float)scale,
                        .q_type = (txattn_dtype)ty[0],
                        .k_type = (txattn_dtype)ty[1],
                        .v_type = (txattn_dtype)ty[2],
                        .o_type = (txattn_dtype)ty[3]};
  if (ragged) {
    p->struct_size = sizeof *p;
    p->ragged = 1;
  }
  char *save = NULL, *tok = strtok_r(line + at, " ", &save);
  if (!tok) return -1;
  *kernel = tok;
  if (!(tok = strtok_r(NULL, " ", &save))) return -1;
  *n_tun = (size_t)strtoull(tok, NULL, 10);
  if (*n_tun > PROF_MAX_TUNABLES) return -1;
  for (size_t i = 0; i < *n_tun; i++) {
    char *name = strtok_r(NULL, " ", &save), *value = strtok_r(NULL, " ", &save);
    if (!name || !value) return -1;
    names[i] = name;
    values[i] = strtoll(value, NULL, 10);
  }
  return 0;
}

typedef struct server {
  const char *plugin_path;
  txattn_context *ctx[8];
  int threads[8];
  size_t n_ctx;
  prof_checks *checks;
  tx_buffers run_bufs; /* the last "run" request's tensors */
  int have_run_bufs;
} server;

static txattn_context *context_for(server *s, int threads) {
  for (size_t i = 0; i < s->n_ctx; i++)
    if (s->threads[i] == threads) return s->ctx[i];
  if (s->n_ctx == sizeof s->ctx / sizeof s->ctx[0]) return NULL;
  txattn_options o = {.plugin_path = s->plugin_path, .table_path = "", .n_threads = threads};
  txattn_context *ctx = NULL;
  if (txattn_context_create(&o, &ctx) != TXATTN_OK) return NULL;
  s->threads[s->n_ctx] = threads;
  s->ctx[s->n_ctx++] = ctx;
  return ctx;
}

/* The same problem (the candidates of one point come one after another). */
static int same_problem(const txattn_problem *a, const txattn_problem *b) {
  return a->batch == b->batch && a->heads_q == b->heads_q && a->heads_kv == b->heads_kv &&
         a->n_q == b->n_q && a->n_kv == b->n_kv && a->d_qk == b->d_qk && a->d_v == b->d_v &&
         a->q_type == b->q_type && a->k_type == b->k_type && a->v_type == b->v_type &&
         a->o_type == b->o_type && a->ragged == b->ragged;
}

/* A "run" request: one call of c's plan on p, on inputs of the profile's kind, kept in *b for the
   next request of the same shape (nothing is compared: the profile checks the rows of its own
   first call). 1 it returned OK, 0 it failed, -1 no tensors. */
static int run_once(tx_buffers *b, int *have, const txattn_problem *p, const prof_cand *c,
                    char *why, size_t size) {
  txattn_problem rp = TXATTN_PROBLEM_INIT; /* the serving fields (ragged) written too */
  if (txattn_problem_resolve(p, &rp) != TXATTN_OK) return -1;
  if (*have && !same_problem(&b->p, &rp)) {
    tx_buffers_free(b);
    *have = 0;
  }
  if (!*have) {
    if (tx_buffers_alloc(b, &rp, TX_LAYOUT_CONTIGUOUS, 0, why, size) != 0) return -1;
    int64_t lens[4096];
    if (rp.ragged) prof_ragged_lens(rp.n_kv, rp.batch, lens);
    if (rp.ragged && tx_buffers_serving(b, 0, lens, (size_t)rp.batch, why, size) != 0) {
      tx_buffers_free(b);
      return -1;
    }
    tx_buffers_fill(b, 1, 1.0f);
    *have = 1;
  }
  txattn_status st = txattn_plan_execute(c->plan, &b->t);
  if (st == TXATTN_OK) {
    snprintf(why, size, "ran");
    return 1;
  }
  snprintf(why, size, "the kernel failed: %s: %s", txattn_status_name(st), txattn_last_error());
  return 0;
}

/* One answer line on `to`: verdict, error, fault (prof_fault), why (one line). */
static void answer(server *s, char *line, FILE *to) {
  int threads;
  size_t cls, n_tun;
  txattn_problem p = TXATTN_PROBLEM_INIT;
  char *kernel;
  const char *names[PROF_MAX_TUNABLES];
  int64_t values[PROF_MAX_TUNABLES];
  double err = NAN;
  char why[256] = "";
  int verdict = -1;
  prof_fault fault = PROF_FAULT_NONE;
  txattn_context *ctx = NULL;
  prof_cand c;
  int run;
  if (parse_request(line, &run, &threads, &cls, &p, &kernel, names, values, &n_tun) != 0)
    snprintf(why, sizeof why, "the check process could not read the request");
  else if (!(ctx = context_for(s, threads)))
    snprintf(why, sizeof why, "the check process could not open a context: %s",
             txattn_last_error());
  else if (prof_candidate_add(ctx, &p, kernel, names, values, n_tun, &c, 0, 1) != 1)
    snprintf(why, sizeof why, "no plan for the check shape: %s", txattn_last_error());
  else if (run) {
    verdict = run_once(&s->run_bufs, &s->have_run_bufs, &p, &c, why, sizeof why);
    err = 0;
    txattn_plan_free(c.plan);
  } else {
    int fresh;
    verdict = prof_check_fault(s->checks, ctx, cls, &p, &c, &err, &fault, why, sizeof why, &fresh);
    txattn_plan_free(c.plan);
  }
  for (char *q = why; *q; q++)
    if (*q == '\n') *q = ' ';
  fflush(stdout); /* what a kernel printed reaches the profile before the answer */
  fprintf(to, "%d %a %d %s\n", verdict, err, (int)fault, why);
  fflush(to);
}

int tx_cmd_check_server(int argc, char **argv) {
  server s = {.plugin_path = argc >= 3 && strcmp(argv[1], "--plugin-path") == 0 ? argv[2] : NULL};
  FILE *to = fdopen(ANSWER_FD, "w");
  if (!to) return TX_EXIT_FAIL;
  /* the plugins are loaded before the ready line: a child that cannot load them is no checker */
  if (!(s.checks = prof_checks_new()) || !context_for(&s, 1)) return TX_EXIT_FAIL;
  fflush(stdout); /* what a plugin printed while loading is not a kernel's check */
  fprintf(to, "%s\n", READY_LINE);
  fflush(to);
  char line[2048];
  while (fgets(line, sizeof line, stdin)) {
    line[strcspn(line, "\n")] = '\0';
    answer(&s, line, to);
  }
  fclose(to);
  prof_checks_free(s.checks);
  if (s.have_run_bufs) tx_buffers_free(&s.run_bufs);
  for (size_t i = 0; i < s.n_ctx; i++) txattn_context_free(s.ctx[i]);
  return TX_EXIT_OK;
}
