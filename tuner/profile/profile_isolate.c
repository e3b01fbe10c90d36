/* txtune profile: the exactness checks in a child process (profile_isolate.h). POSIX; the child's
   program is found through Linux's /proc/self/exe. */
#define _GNU_SOURCE /* strsignal */
#include "profile_isolate.h"

#include <errno.h>
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
#include "timing.h"

extern char **environ;

/* The child's first line, once its library is loaded: before it, a child that dies or does not
   answer within check_timeout_s was never a checker (it could not be started), and the checks run
   in the profile's process. A check shape is small (check_n): even the naive kernel under an
   emulator checks it in well under a second. */
#define READY_LINE "txtune-check-server 1"

struct prof_isolation {
  char *plugin_path;
  pid_t pid;    /* 0: no child */
  int to, from; /* the child's stdin and stdout */
  int unusable; /* no child could be started: every check runs in the profile's process */
  char buf[1024];
  size_t len; /* bytes of an unfinished line in buf */
  struct sigaction old_pipe;
};

prof_isolation *prof_isolation_new(const char *plugin_path) {
  prof_isolation *iso = calloc(1, sizeof *iso);
  if (!iso) return NULL;
  iso->to = iso->from = -1;
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
  iso->to = iso->from = -1;
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

/* Reads one line from the child within timeout_s: 1 a line (in line, no newline), 0 end of file,
   -1 timeout or error. */
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
    struct pollfd p = {.fd = iso->from, .events = POLLIN};
    int got = poll(&p, 1, (int)ceil(left * 1000));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return -1;
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

static int start_child(prof_isolation *iso) {
  char exe[4096];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return -1;
  exe[n] = '\0';
  int in[2], out[2];
  if (pipe(in) != 0) return -1;
  if (pipe(out) != 0) {
    close(in[0]);
    close(in[1]);
    return -1;
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, in[0], STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&fa, out[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&fa, in[1]);
  posix_spawn_file_actions_addclose(&fa, out[0]);
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
  if (rc != 0) {
    close(in[1]);
    close(out[0]);
    return -1;
  }
  iso->pid = pid;
  iso->to = in[1];
  iso->from = out[0];
  char line[256];
  if (read_line(iso, prof_policy.check_timeout_s, line, sizeof line) != 1 ||
      strcmp(line, READY_LINE) != 0) {
    stop_child(iso, 1, NULL);
    return -1;
  }
  return 0;
}

/* What happened to a child that ended (wait status st) or was stopped while checking. */
static void death(int st, int hung, const txattn_problem *small, char *why, size_t size) {
  if (hung)
    snprintf(why, size, "did not finish its check (n = %lld) in %g s: stopped",
             (long long)small->n_kv, prof_policy.check_timeout_s);
  else if (st >= 0 && WIFSIGNALED(st))
    snprintf(why, size, "crashed on its check (n = %lld): signal %d (%s)", (long long)small->n_kv,
             WTERMSIG(st), strsignal(WTERMSIG(st)));
  else if (st >= 0 && WIFEXITED(st))
    snprintf(why, size, "ended the check process on its check (n = %lld), exit status %d",
             (long long)small->n_kv, WEXITSTATUS(st));
  else
    snprintf(why, size, "lost the check process on its check (n = %lld)", (long long)small->n_kv);
}

/* The request: threads, class, the problem (scale in hex, exact; the element types), the kernel,
   its tunables. */
static int format_request(char *buf, size_t size, int threads, size_t cls, const txattn_problem *p,
                          const prof_cand *c) {
  int n = snprintf(buf, size,
                   "check %d %zu %lld %lld %lld %lld %lld %lld %lld %d %lld %lld %a %d %d %d %d %s "
                   "%zu",
                   threads, cls, (long long)p->batch, (long long)p->heads_q, (long long)p->heads_kv,
                   (long long)p->n_q, (long long)p->n_kv, (long long)p->d_qk, (long long)p->d_v,
                   (int)p->mask, (long long)p->window_left, (long long)p->window_right,
                   (double)p->scale, (int)p->q_type, (int)p->k_type, (int)p->v_type, (int)p->o_type,
                   c->name, c->n_tun);
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

int prof_isolated_check(prof_isolation *iso, int threads, size_t cls, const txattn_problem *small,
                        const prof_cand *cand, double *err, char *why, size_t why_size) {
  char req[2048], line[sizeof iso->buf];
  int len = format_request(req, sizeof req, threads, cls, small, cand);
  if (iso->unusable || len < 0) return -2;
  if (iso->pid == 0 && start_child(iso) != 0) {
    iso->unusable = 1;
    return -2;
  }
  *err = NAN;
  int got = write_all(iso->to, req, (size_t)len) == 0
                ? read_line(iso, prof_policy.check_timeout_s, line, sizeof line)
                : 0;
  int verdict, at = 0;
  double e;
  if (got == 1 && sscanf(line, "%d %lf %n", &verdict, &e, &at) == 2 && at > 0 && verdict >= -1 &&
      verdict <= 1) {
    *err = e;
    snprintf(why, why_size, "%s", line + at);
    return verdict;
  }
  int st;
  stop_child(iso, 1, &st);
  death(st, got < 0, small, why, why_size);
  return 0;
}

/* ---- the child ---- */

static int parse_request(char *line, int *threads, size_t *cls, txattn_problem *p, char **kernel,
                         const char **names, int64_t *values, size_t *n_tun) {
  long long v[11];
  int mask, at = 0, ty[4];
  double scale;
  memset(p, 0, sizeof *p);
  if (sscanf(line,
             "check %d %zu %lld %lld %lld %lld %lld %lld %lld %d %lld %lld %lf %d %d %d %d %n",
             threads, cls, &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &mask, &v[7], &v[8],
             &scale, &ty[0], &ty[1], &ty[2], &ty[3], &at) != 17 ||
      at == 0)
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

/* One answer line: verdict, error, why (one line). */
static void answer(server *s, char *line) {
  int threads;
  size_t cls, n_tun;
  txattn_problem p;
  char *kernel;
  const char *names[PROF_MAX_TUNABLES];
  int64_t values[PROF_MAX_TUNABLES];
  double err = NAN;
  char why[256] = "";
  int verdict = -1;
  txattn_context *ctx = NULL;
  prof_cand c;
  if (parse_request(line, &threads, &cls, &p, &kernel, names, values, &n_tun) != 0)
    snprintf(why, sizeof why, "the check process could not read the request");
  else if (!(ctx = context_for(s, threads)))
    snprintf(why, sizeof why, "the check process could not open a context: %s",
             txattn_last_error());
  else if (prof_candidate_add(ctx, &p, kernel, names, values, n_tun, &c, 0, 1) != 1)
    snprintf(why, sizeof why, "no plan for the check shape: %s", txattn_last_error());
  else {
    int fresh;
    verdict = prof_check(s->checks, ctx, cls, &p, &c, &err, why, sizeof why, &fresh);
    txattn_plan_free(c.plan);
  }
  for (char *q = why; *q; q++)
    if (*q == '\n') *q = ' ';
  printf("%d %a %s\n", verdict, err, why);
  fflush(stdout);
}

int tx_cmd_check_server(int argc, char **argv) {
  server s = {.plugin_path = argc >= 3 && strcmp(argv[1], "--plugin-path") == 0 ? argv[2] : NULL};
  /* the plugins are loaded before the ready line: a child that cannot load them is no checker */
  if (!(s.checks = prof_checks_new()) || !context_for(&s, 1)) return TX_EXIT_FAIL;
  printf("%s\n", READY_LINE);
  fflush(stdout);
  char line[2048];
  while (fgets(line, sizeof line, stdin)) {
    line[strcspn(line, "\n")] = '\0';
    answer(&s, line);
  }
  prof_checks_free(s.checks);
  for (size_t i = 0; i < s.n_ctx; i++) txattn_context_free(s.ctx[i]);
  return TX_EXIT_OK;
}
