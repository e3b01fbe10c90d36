/* SPDX-License-Identifier: MIT */
/* txtune profile: the command, the loop (docs/profiling.md, "The loop"), the budget, the summary. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd_profile.h"
#include "context_cli.h"
#include "problem_cli.h"
#include "profile_run.h"
#include "core_latency.h"
#include "timing.h"
#include "verify.h"

#define SEED UINT64_C(0x70726f66696c65)

const prof_mode_knobs prof_modes[3] = {
    {30, 1e-3, 3, 0},   /* --quick */
    {180, 2e-3, 5, 1},  /* default */
    {1800, 5e-3, 7, 2}, /* --patient */
};

static const char about[] =
    "Measures the installed kernels on this machine and writes the dispatch table libtxattn\n"
    "follows from then on: for each class of shapes (--threads, --d, --dtype; docs/profiling.md\n"
    "lists them), from n = 64 up to --n-max, every exact candidate (kernel x tunables) is timed\n"
    "interleaved with the others and the fastest within the noise wins. The budget is a hard cap.\n"
    "Modes: --quick (30 s, default tunables), default (3 min, one tile variant), --patient\n"
    "(30 min, a grid of tiles). The table goes to -o FILE, else $TXATTN_TABLE, else\n"
    "$XDG_CACHE_HOME/txtune/dispatch.json, else ~/.cache/txtune/dispatch.json. --update measures,\n"
    "at the points of that table, only the kernels it did not measure, and merges them in.";

static int parse(profile_run *r, int argc, char **argv) {
  tx_opt *o = r->opts;
  r->n_max = 0;
  r->budget_s = 0;
  o[0] = tx_opt_flag("quick", &r->quick, "about 30 s: fewer points, default tunables only");
  o[1] = tx_opt_flag("patient", &r->patient, "a wider tile search (about 30 min)");
  o[2] = tx_opt_list("threads", &r->threads, "LIST", "thread counts [1 and every core]");
  o[3] = tx_opt_list("d", &r->d, "LIST", "head sizes [64,128]");
  o[4] = tx_opt_int("n-max", &r->n_max, "N", "the largest n [16384; --quick 4096]", 64,
                    INT64_C(1) << 20);
  o[5] = tx_opt_double(
      "budget", &r->budget_s, "S",
      "seconds for the whole profile, a hard cap [180; --quick 30; --patient 1800]", 1, 1e6);
  o[6] = tx_opt_string("output", &r->out, "FILE",
                       "where to write the table (also -o FILE) [the default path]");
  o[7] = tx_opt_string("plugin-path", &r->plugin_path, "DIRS",
                       "plugin directories, ':'-separated [$TXATTN_PLUGIN_PATH, else the default]");
  o[8] = tx_opt_repeat("dtype", &r->dtypes, "TYPES",
                       "types of the 16-bit classes, repeatable: T, Q,K,V,O or kv=T of f32, f16, "
                       "bf16; f32 alone: none [kv=f16, and an all-bf16 prefill class]");
  o[9] = tx_opt_flag("update", &r->update,
                     "measure only the kernels the table at -o FILE (else the default path) did "
                     "not measure, at its points, and merge them into it");
  r->groups[0] = (tx_opt_group){"Options", r->opts, 10};
  r->spec = (tx_cmd_spec){"profile",
                          "[--quick | --patient] [--threads LIST] [--d LIST] [--n-max N] "
                          "[--dtype TYPES ...] [--budget S] [--update] [-o FILE]",
                          about, r->groups, 1};
  int rc = tx_args_parse_cmd(&r->spec, argc, argv);
  if (rc >= 0) return rc;
  if (r->quick && r->patient)
    return tx_args_usage_error(&r->spec, "--quick and --patient contradict each other");
  if (r->update && (r->threads.n || r->d.n || r->dtypes.n || r->n_max))
    return tx_args_usage_error(&r->spec, "--update measures at the table's points: --threads, "
                                         "--d, --dtype and --n-max do not apply");
  return -1;
}

static void settings(profile_run *r) {
  r->mode = r->quick ? PROF_QUICK : r->patient ? PROF_PATIENT : PROF_DEFAULT;
  if (r->budget_s <= 0) r->budget_s = prof_modes[r->mode].budget_s;
  if (r->n_max <= 0) r->n_max = r->quick ? 4096 : 16384;
}

/* ---- one point ---- */

static void describe_point(const prof_grid_class *gc, int64_t n, int64_t rr, char *buf,
                           size_t size);

/* c excluded at (n, rr) of gc's class; an inexact one counts in n_excluded. */
static void add_exclusion(profile_run *r, const prof_grid_class *gc, int64_t n, int64_t rr,
                          const prof_cand *c, double err, const char *why, prof_fault fault) {
  if (prof_table_exclude(r->table, &gc->cls, c->name, c->n_tun, c->tun_names, c->tun_values, n, rr,
                         err, *why ? why : "not exact") == TXATTN_OK &&
      fault == PROF_FAULT_INEXACT)
    r->n_excluded++;
}

static const char *fault_word(prof_fault f) {
  return f == PROF_FAULT_CRASHED    ? "crashed"
         : f == PROF_FAULT_HUNG     ? "hung"
         : f == PROF_FAULT_PRINTS   ? "printed to stdout"
         : f == PROF_FAULT_OVERRUN  ? "wrote outside its output"
         : f == PROF_FAULT_LATER    ? "turned inexact after a first exact call"
         : f == PROF_FAULT_TOO_FAST ? "ran faster than this machine can compute"
                                    : "was inexact";
}

/* The note of kernel `name` that failed to plan (PROF_FAULT_NONE) or did `fault`, made with its
   first place and reason when new (*fresh); NULL when the list is full. */
static prof_kernel_note *note_kernel(profile_run *r, const char *name, prof_fault fault,
                                     const char *at, const char *why, int *fresh) {
  *fresh = 0;
  for (size_t k = 0; k < r->n_notes; k++)
    if (!strcmp(r->notes[k].name, name) && !r->notes[k].fault == !fault) return &r->notes[k];
  if (r->n_notes == MAX_NOTED_KERNELS) return NULL;
  prof_kernel_note *x = &r->notes[r->n_notes++];
  *x = (prof_kernel_note){.fault = fault};
  snprintf(x->name, sizeof x->name, "%s", name);
  snprintf(x->first_at, sizeof x->first_at, "%s", at);
  snprintf(x->first_why, sizeof x->first_why, "%s", why);
  *fresh = 1;
  return x;
}

/* A candidate excluded for what its kernel did on a check: counted per kernel, and said on stderr
   the first time. One that hung or printed would cost every later trial its timeout or print
   through the profile's output; one that faulted at a timed point, or cheated there, cannot be
   believed: those are left out of the rest of the profile. */
static void note_fault(profile_run *r, const prof_grid_class *gc, int64_t n, int64_t rr,
                       const prof_cand *c, prof_fault fault, const char *why) {
  int out = fault == PROF_FAULT_HUNG || fault == PROF_FAULT_PRINTS || n != PROF_CHECK_N, fresh;
  char at[160];
  describe_point(gc, n, rr, at, sizeof at);
  prof_kernel_note *x = note_kernel(r, c->name, fault, at, why, &fresh);
  if (!x) return;
  if (fresh) {
    r->n_faulty_by[fault]++;
    prof_progress_end(&r->prog);
    fprintf(stderr, "txtune profile: %s in %s: %s; %s\n", c->name, at, why,
            out ? "it is left out of the rest of the profile"
                : "it is excluded wherever it does so and the profile goes on");
  }
  x->left_out |= out;
  x->count++;
}

/* ---- kernels that fail to plan ---- */

/* Copies s into buf as one line of printable characters, as the table's reasons are. */
static void one_line(char *buf, size_t size, const char *s) {
  snprintf(buf, size, "%s", s);
  for (char *c = buf; *c; c++)
    if ((unsigned char)*c < 0x20 || *c == 0x7f) *c = ' ';
}

/* The kernels that failed to plan the point p (`what`) are left out of it: each (kernel, point)
   is an exclusion of the table with the reason, and a kernel's first failure is said on stderr. */
static void plan_failures(profile_run *r, const prof_grid_class *gc, int64_t n, int64_t rr,
                          const prof_plan_failures *pf, const char *what) {
  char reason[512], text[512];
  prof_progress_end(&r->prog);
  for (size_t i = 0; i < pf->n; i++) {
    const prof_plan_failure *f = &pf->f[i];
    snprintf(text, sizeof text, "failed to plan: %.380s", f->why);
    one_line(reason, sizeof reason, text);
    txattn_status s =
        prof_table_exclude(r->table, &gc->cls, f->name, 0, NULL, NULL, n, rr, NAN, reason);
    if (s != TXATTN_OK)
      tx_print_lib_error("profile", "cannot record a kernel that failed to plan", s);
    r->n_plan_failures++;
    int fresh;
    prof_kernel_note *x = note_kernel(r, f->name, PROF_FAULT_NONE, what, f->why, &fresh);
    if (fresh)
      fprintf(stderr,
              "txtune profile: %s failed to plan %s: %s; it is left out of every point it fails "
              "to plan (the table's exclusions list them) and the profile goes on\n",
              f->name, what, f->why);
    r->n_failed_kernels += (size_t)fresh;
    if (x) x->count++;
  }
}

double prof_now_s(const profile_run *r) {
  return tx_clock() - r->start;
}

/* The hard end of the budget (a tx_clock() time): no run is predicted to end after it. */
static double deadline(const profile_run *r) {
  return r->start + r->budget_s - PROF_END_RESERVE_S;
}

/* How long a trial may wait: a tenth of the budget within 1 s .. PROF_CHECK_TIMEOUT_S, and never
   past the budget's end (*cut: the end cut it, so no answer is no hang). */
static double check_timeout(const profile_run *r, double extra, int *cut) {
  double t = fmin(PROF_CHECK_TIMEOUT_S, fmax(1.0, 0.1 * r->budget_s)) + extra;
  double left = deadline(r) - tx_clock();
  *cut = left < t;
  return fmax(fmin(t, left), 0.05);
}

/* The document mask tx_mask_tensor_make builds from now on: documents of n / PROF_DOC_PARTS keys,
   as --doc-lens would give them. */
static int docs(profile_run *r, int64_t n) {
  char lens[32];
  tx_modifier_args mods;
  tx_modifier_args_init(&mods);
  snprintf(lens, sizeof lens, "%lld", (long long)(n / PROF_DOC_PARTS > 0 ? n / PROF_DOC_PARTS : 1));
  mods.doc_lens = lens;
  return tx_modifier_parse(&r->spec, &mods) == 0;
}

/* Where no scanner can be started (an emulator's user-mode run), c's check on the small shape p
   in this process, against the reference by tx_verify: 1 exact (*err), 0 not (why), -1 it cannot
   run p. */
static int check_here(profile_run *r, const prof_grid_class *gc, const txattn_problem *p,
                      const prof_cand *c, double *err, char *why, size_t size) {
  txattn_problem q = TXATTN_PROBLEM_INIT;
  tx_buffers b;
  txattn_plan *plan = NULL;
  int64_t lens[PROF_RAGGED_SPREAD];
  int v = -1;
  if (txattn_problem_resolve(p, &q) != TXATTN_OK || (q.mask_tensor && !docs(r, q.n_kv)) ||
      tx_buffers_alloc(&b, &q, TX_LAYOUT_CONTIGUOUS, 1, why, size) != 0)
    return -1;
  if (q.ragged) prof_ragged_lens(q.n_kv, q.batch, lens);
  if ((!q.ragged || tx_buffers_serving(&b, 0, lens, (size_t)q.batch, why, size) == 0) &&
      txattn_plan_create_tuned(r->g.ctx[gc->ctx], &b.p, c->name, c->tun_names, c->tun_values,
                               c->n_tun, &plan) == TXATTN_OK) {
    tx_buffers_fill(&b, SEED, 1.0f);
    txattn_status s = tx_buffers_reference(&b);
    if (s == TXATTN_OK) s = txattn_plan_execute(plan, &b.t);
    tx_verdict vd;
    memset(&vd, 0, sizeof vd);
    if (s == TXATTN_OK) tx_verify(&b, b.o, b.o_ref, NULL, &vd);
    v = s == TXATTN_OK && tx_verdict_pass(&vd);
    *err = s == TXATTN_OK ? vd.scaled_error : NAN;
    if (s != TXATTN_OK)
      snprintf(why, size, "the kernel failed: %s: %.300s", txattn_status_name(s),
               txattn_last_error());
    else if (!v)
      tx_verdict_explain(&vd, why, size);
  }
  txattn_plan_free(plan);
  tx_buffers_free(&b);
  return v;
}

/* c's call on p in the scanner's process (txattn_kernel_trial), compared with the reference on
   its check (compare) or only run, before it is timed here. 1 it ran (*err its error as the table
   counts it), or its call failed there at a timed point (the timing says so); 0 inexact or a fault
   (*fault, why); -1 it cannot run p, or no answer came before the budget's end. */
static int trial(profile_run *r, const prof_grid_class *gc, const txattn_problem *p,
                 const prof_cand *c, int compare, double extra, double *err, prof_fault *fault,
                 char *why, size_t size) {
  int cut;
  txattn_trial t = TXATTN_TRIAL_INIT;
  t.timeout_s = check_timeout(r, extra, &cut);
  t.compare = compare;
  txattn_context *ctx = r->g.ctx[gc->ctx];
  const char *on = compare ? "on its check" : "at a timed point";
  long long n = (long long)p->n_kv;
  *fault = PROF_FAULT_NONE;
  *err = NAN;
  if (txattn_kernel_trial(ctx, c->kernel, p, c->tun_names, c->tun_values, c->n_tun,
                          txattn_context_threads(ctx), &t) != TXATTN_OK)
    return -1;
  for (char *q = t.why; *q; q++) /* one line, as the table's reasons are */
    if ((unsigned char)*q < 0x20 || *q == '"') *q = '?';
  switch (t.outcome) {
  case TXATTN_TRIAL_RAN:
    *err = t.error > 0 ? t.error / t.bound * TXATTN_EXACT_TOLERANCE : 0;
    return 1;
  case TXATTN_TRIAL_INEXACT:
    *err = t.error / t.bound * TXATTN_EXACT_TOLERANCE;
    *fault = PROF_FAULT_INEXACT;
    snprintf(why, size, "%s", t.why);
    return 0;
  case TXATTN_TRIAL_FAILED:
    *fault = compare ? PROF_FAULT_INEXACT : PROF_FAULT_NONE;
    snprintf(why, size, "the kernel failed: %s: %.300s", txattn_status_name(t.status), t.why);
    return compare ? 0 : 1;
  case TXATTN_TRIAL_CRASHED:
    *fault = PROF_FAULT_CRASHED;
    if (t.signal)
      snprintf(why, size, "crashed %s (n = %lld): %.300s", on, n, t.why);
    else
      snprintf(why, size, "crashed %s (n = %lld): exit status %d (it ended the process)", on, n,
               t.exit_status);
    return 0;
  case TXATTN_TRIAL_HUNG:
    if (cut) {
      snprintf(why, size, "no answer %s before the budget's end", on);
      return -1;
    }
    *fault = PROF_FAULT_HUNG;
    snprintf(why, size, "hung (no answer within %.3g s) %s (n = %lld): stopped", t.timeout_s, on,
             n);
    return 0;
  case TXATTN_TRIAL_PRINTED:
    *fault = PROF_FAULT_PRINTS;
    snprintf(why, size,
             "prints to stdout (%zu bytes %s, the first: \"%.100s\"), which a kernel must not",
             t.printed, on, t.why);
    return 0;
  case TXATTN_TRIAL_OUTSIDE:
    *fault = PROF_FAULT_OVERRUN;
    if (t.after || t.before)
      snprintf(why, size,
               "wrote outside its output: up to %zu bytes past the end of o, %zu before "
               "its start",
               t.after, t.before);
    else
      snprintf(why, size, "wrote outside its buffers: %.300s", t.why);
    return 0;
  case TXATTN_TRIAL_DECLINED:
    snprintf(why, size, "%s", t.why);
    return compare ? -1 : 1;
  default: /* no scanner: the check here, the first call at a timed point left to the timing */
    if (!compare) return 1;
    int v = check_here(r, gc, p, c, err, why, size);
    *fault = v == 0 ? PROF_FAULT_INEXACT : PROF_FAULT_NONE;
    return v;
  }
}

/* Whether the kernel of that name was left out of the rest of the profile (note_fault). */
static int left_out(const profile_run *r, const char *name) {
  for (size_t k = 0; k < r->n_notes; k++)
    if (r->notes[k].left_out && strcmp(r->notes[k].name, name) == 0) return 1;
  return 0;
}

/* The check of a third-party candidate on its class's small shape, once per class, r and tunables
   (remembered in r->checked): as trial says. *fresh: checked now. */
static int check_small(profile_run *r, prof_grid_class *gc, int64_t rr, const prof_cand *c,
                       double *err, prof_fault *fault, char *why, size_t size, int *fresh) {
  prof_checked *e = NULL;
  for (size_t i = 0; i < r->n_checked && !e; i++)
    if (r->checked[i].cls == gc->id && r->checked[i].r == rr && r->checked[i].kernel == c->kernel &&
        r->checked[i].n_tun == c->n_tun &&
        !memcmp(r->checked[i].values, c->tun_values, c->n_tun * sizeof(int64_t)))
      e = &r->checked[i];
  *fresh = e == NULL;
  if (!e) {
    if (r->n_checked % 64 == 0) {
      prof_checked *g = realloc(r->checked, (r->n_checked + 64) * sizeof *g);
      if (!g) return -1;
      r->checked = g;
    }
    e = &r->checked[r->n_checked++];
    *e = (prof_checked){.cls = gc->id, .r = rr, .kernel = c->kernel, .n_tun = c->n_tun};
    memcpy(e->values, c->tun_values, c->n_tun * sizeof(int64_t));
    txattn_problem small = prof_grid_problem(gc, PROF_CHECK_N, rr);
    e->verdict = trial(r, gc, &small, c, 1, 0, &e->err, &e->fault, e->why, sizeof e->why);
  }
  *err = e->err;
  *fault = e->fault;
  snprintf(why, size, "%s", e->why);
  return e->verdict;
}

/* The candidates that may be timed at p: the shipped ones (the timed calls' checks hold them), and
   the third-party ones exact on their class's small shape whose first call at p, in the scanner's
   process, neither crashed, hung nor printed (with ten times the point's foreseen seconds more to
   answer). The others are excluded (once per class, r and tunables), each fault said; a kernel
   left out before is dropped. *inexact and *faulty count them. */
static size_t keep_trusty(profile_run *r, prof_grid_class *gc, int64_t n, int64_t rr,
                          const txattn_problem *p, prof_cand *c, size_t nc, double foreseen,
                          size_t *inexact, size_t *faulty) {
  txattn_context *ctx = r->g.ctx[gc->ctx];
  size_t kept = 0;
  *inexact = *faulty = 0;
  for (size_t i = 0; i < nc; i++) {
    txattn_kernel_info info = TXATTN_KERNEL_INFO_INIT;
    double err;
    char why[512];
    prof_fault fault = PROF_FAULT_NONE;
    int fresh = 0, v = left_out(r, c[i].name) ? -1 : 1;
    if (v == 1 && txattn_kernel_get(ctx, c[i].kernel, &info) == TXATTN_OK &&
        !prof_kernel_shipped(&info)) {
      v = check_small(r, gc, rr, &c[i], &err, &fault, why, sizeof why, &fresh);
      if (v == 1) c[i].max_error = err;
      if (v == 0 && fresh) {
        add_exclusion(r, gc, PROF_CHECK_N, rr, &c[i], err, why, fault);
        if (fault != PROF_FAULT_INEXACT) note_fault(r, gc, PROF_CHECK_N, rr, &c[i], fault, why);
      }
      if (v == 1 &&
          (v = trial(r, gc, p, &c[i], 0, 10 * foreseen, &err, &fault, why, sizeof why)) == 0) {
        add_exclusion(r, gc, n, rr, &c[i], NAN, why, fault);
        note_fault(r, gc, n, rr, &c[i], fault, why);
      }
    }
    *inexact += v == 0 && fault == PROF_FAULT_INEXACT;
    *faulty += v == 0 && fault != PROF_FAULT_INEXACT;
    if (v == 1)
      c[kept++] = c[i];
    else
      txattn_plan_free(c[i].plan);
  }
  return kept;
}

static void free_bufs(profile_run *r) {
  for (size_t i = 0; i < r->n_bufs; i++) tx_buffers_free(&r->bufs[i].b);
  r->n_bufs = 0;
  r->buf_n = 0;
}

/* The tensors of the point p: the start of buffers shared by every class of its types and kind
   (dense, ragged or with the document mask tensor) at its n, allocated and filled once per n
   (standard-normal inputs rounded to the types; the output touched once, so that no timed call
   pays for its first touch). A ragged point's lengths are prof_ragged_lens of n; the document
   mask's documents have n / PROF_DOC_PARTS keys; a paged point's K and V are copied into pages in
   a shuffled order (tx_buffers_page), and *dense has them as tensors (for the sampled rows'
   reference), else it is *t. -1 when they cannot be allocated. */
static int tensors_for(profile_run *r, const txattn_problem *p, txattn_tensors *t,
                       txattn_tensors *dense) {
  tx_dtypes types = tx_dtypes_of(p);
  int kind = p->ragged ? 1 : p->mask_tensor ? 2 : p->page_size ? 3 : 0;
  int64_t n = p->n_kv;
  if (r->buf_n != n) free_bufs(r);
  prof_bufs *pb = NULL;
  for (size_t i = 0; i < r->n_bufs && !pb; i++)
    if (!memcmp(&r->bufs[i].types, &types, sizeof types) && r->bufs[i].ragged == kind)
      pb = &r->bufs[i];
  if (!pb && r->n_bufs < sizeof r->bufs / sizeof r->bufs[0]) {
    txattn_problem big = *p;
    for (size_t i = 0; i < r->g.n_cls; i++) { /* the most heads, rows and the largest d */
      const prof_grid_class *gc = &r->g.cls[i];
      txattn_problem q = prof_grid_problem(gc, n, 0);
      if (memcmp(&types, &(tx_dtypes){{q.q_type, q.k_type, q.v_type, q.o_type}}, sizeof types) ||
          (q.ragged        ? 1
           : q.mask_tensor ? 2
           : q.page_size   ? 3
                           : 0) != kind)
        continue;
      big.heads_kv = q.heads_kv > big.heads_kv ? q.heads_kv : big.heads_kv;
      big.heads_q = q.heads_q > big.heads_q ? q.heads_q : big.heads_q;
      big.n_q = q.n_q > big.n_q ? q.n_q : big.n_q; /* a decode class may come first */
      big.d_qk = big.d_v = q.d_qk > big.d_qk ? q.d_qk : big.d_qk;
      big.batch = q.batch > big.batch ? q.batch : big.batch;
    }
    big.heads_q = (big.heads_q + big.heads_kv - 1) / big.heads_kv * big.heads_kv;
    char err[256];
    int64_t lens[PROF_RAGGED_SPREAD * 8];
    pb = &r->bufs[r->n_bufs];
    int bad = big.batch > (int64_t)(sizeof lens / sizeof lens[0]) || (kind == 2 && !docs(r, n)) ||
              txattn_problem_resolve(&big, &big) != TXATTN_OK ||
              tx_buffers_alloc(&pb->b, &big, TX_LAYOUT_CONTIGUOUS, 0, err, sizeof err) != 0;
    if (!bad && kind == 1) {
      prof_ragged_lens(n, big.batch, lens);
      if (tx_buffers_serving(&pb->b, 0, lens, (size_t)big.batch, err, sizeof err) != 0) {
        tx_buffers_free(&pb->b);
        bad = 1;
      }
    }
    if (!bad) tx_buffers_fill(&pb->b, SEED, 1.0f);
    if (!bad && kind == 3 && tx_buffers_page(&pb->b, SEED, err, sizeof err) != 0) {
      tx_buffers_free(&pb->b);
      bad = 1;
    }
    if (!bad) {
      pb->types = types;
      pb->ragged = kind;
      tx_fill_value(pb->b.o, big.o_type, pb->b.o_len, 0.0f);
      r->n_bufs++;
      r->buf_n = n;
    } else {
      pb = NULL;
    }
  }
  if (!pb) {
    prof_progress_end(&r->prog);
    fprintf(stderr, "txtune profile: cannot allocate the tensors at n = %lld\n", (long long)n);
    return -1;
  }
  tx_buffers *b = &pb->b;
  *t = (txattn_tensors){.q_data = b->q,
                        .k_data = b->k,
                        .v_data = b->v,
                        .o_data = b->o,
                        .struct_size = sizeof *t,
                        .kv_lens = p->ragged ? b->kv_lens : NULL,
                        .mask = b->mask,
                        .mask_layout = b->t.mask_layout};
  *dense = *t;
  if (kind == 3) {
    t->k_data = b->k_pool;
    t->v_data = b->v_pool;
    t->block_table = b->table;
  }
  return 0;
}

/* A point the table refuses is left out (the class may then have none: see write_table). */
static void record(profile_run *r, prof_grid_class *gc, int64_t n, int64_t rr, prof_cand *c,
                   size_t nc) {
  size_t w = prof_choose(c, nc);
  if (w == nc) return;
  txattn_status s =
      prof_table_add_point(r->table, &gc->cls, &gc->in_table, &gc->table_index, n, rr, c, nc, w);
  if (s != TXATTN_OK) {
    prof_progress_end(&r->prog);
    tx_print_lib_error("profile", "cannot record a point", s);
    if (gc->fate.refused++ == 0)
      snprintf(gc->fate.refused_why, sizeof gc->fate.refused_why, "%s: %s", txattn_status_name(s),
               txattn_last_error());
    return;
  }
  gc->fate.recorded++;
  r->n_points++;
  int tie = 0;
  for (size_t i = 0; i < nc; i++) tie |= c[i].n_runs > 0 && c[i].time_s < c[w].time_s;
  r->n_ties += (size_t)tie;
  if (c[w].spread >= 0 && r->n_spreads < sizeof r->spreads / sizeof r->spreads[0])
    r->spreads[r->n_spreads++] = c[w].spread;
}

/* The check of a point's timed calls (prof_run_check): its sampled rows (prof_rows) and the least
   time a call can take there (point_floor). */
typedef struct point_rows {
  profile_run *r;
  prof_grid_class *gc;
  txattn_problem p; /* resolved */
  int64_t rr;
  size_t ri;
  prof_rows *rows; /* NULL: the reference rows could not be made: the check's error stands */
  char floor_why[320];
  size_t dropped; /* candidates refused here */
  size_t faulty;  /* of them, those whose kernel cheated (PROF_FAULT_LATER, TOO_FAST) */
} point_rows;

/* The rows of p to check: PROF_CHECK_ROWS, or as many (2 at least: the first and the last) as
   hold PROF_CHECK_ROW_WORK of the reference's work, a row's being its visible keys x (d_qk + d_v). */
static int rows_to_check(const txattn_problem *p) {
  int64_t keys = p->n_kv;
  if (p->mask == TXATTN_MASK_WINDOW && p->window_left >= 0 && p->window_right >= 0 &&
      p->window_left + p->window_right + 1 < keys)
    keys = p->window_left + p->window_right + 1;
  double rows = floor(PROF_CHECK_ROW_WORK / ((double)keys * (double)(p->d_qk + p->d_v)));
  return rows < 2 ? 2 : rows > PROF_CHECK_ROWS ? PROF_CHECK_ROWS : (int)rows;
}

/* The least time a call of the point p (resolved) can take on its class's threads
   (tx_roof_floor_s, with PROF_FLOOR_SLACK): its flops, and the K and V rows it must read, at
   least as many per (batch, kv head) as the keys its rows see on average. */
static double point_floor(const profile_run *r, const prof_grid_class *gc, const txattn_problem *p,
                          char *why, size_t size) {
  double pairs = prof_grid_pairs(p);
  double flops = 2.0 * (double)(p->d_qk + p->d_v) * pairs;
  double kv_rows = pairs / ((double)(p->heads_q / p->heads_kv) * (double)p->n_q);
  double row_bytes = (double)txattn_dtype_bytes(p->k_type, p->d_qk) +
                     (double)txattn_dtype_bytes(p->v_type, p->d_v);
  int half = p->q_type != TXATTN_DTYPE_F32 || p->k_type != TXATTN_DTYPE_F32 ||
             p->v_type != TXATTN_DTYPE_F32;
  return tx_roof_floor_s(&r->ceiling, gc->cls.threads, flops, kv_rows * row_bytes, half,
                         PROF_FLOOR_SLACK, why, size);
}

static void turn_rows(void *arg, const txattn_tensors *t) {
  prof_rows_turn(((point_rows *)arg)->rows, t);
}

static int exact_rows(void *arg, const txattn_tensors *t, double *err, char *why, size_t size) {
  return prof_rows_check(((point_rows *)arg)->rows, t, err, why, size);
}

/* prof_run_check's refusal at a point: an exclusion of the table. A candidate inexact on its first
   call is left out of the rest of its class and r; the kernel of one that cheated after it, or
   was faster than the machine, out of the rest of the profile. */
static void point_refused(void *arg, prof_cand *c, prof_fault fault, double err, const char *why) {
  point_rows *pr = arg;
  profile_run *r = pr->r;
  add_exclusion(r, pr->gc, pr->p.n_kv, pr->rr, c, err, why, fault);
  pr->dropped++;
  if (fault == PROF_FAULT_INEXACT) { /* not timed again in its series */
    prof_series *se = &pr->gc->series[pr->ri];
    if (se->n_last < PROF_MAX_CANDS) se->last[se->n_last++] = (prof_last){c->kernel, c->slot, 0, 1};
    r->n_inexact_at_point++;
  } else {
    pr->faulty++;
    note_fault(r, pr->gc, pr->p.n_kv, pr->rr, c, fault, why);
  }
}

/* The check of the timed calls of the point p of gc at tensors t (K and V as tensors, also for a
   paged point): the sampled rows (said on stderr when they cannot be made) and the floor. */
static void point_check(profile_run *r, point_rows *pr, const txattn_problem *p,
                        const txattn_tensors *t, prof_run_check *chk) {
  txattn_problem dense = TXATTN_PROBLEM_INIT;
  char why[256];
  *chk = (prof_run_check){.refused = point_refused, .arg = pr};
  if (txattn_problem_resolve(p, &pr->p) != TXATTN_OK) return;
  chk->floor_s = point_floor(r, pr->gc, &pr->p, pr->floor_why, sizeof pr->floor_why);
  chk->floor_why = pr->floor_why;
  dense = pr->p; /* the sampled rows' reference reads K and V as tensors */
  dense.page_size = dense.max_pages = dense.n_pages = 0;
  if (!(pr->rows = prof_rows_new(&dense, t, rows_to_check(&pr->p), why, sizeof why))) {
    prof_progress_end(&r->prog);
    fprintf(stderr, "txtune profile: n = %lld: the candidates' errors there are not measured: %s\n",
            (long long)pr->p.n_kv, why);
    return;
  }
  chk->turn = turn_rows;
  chk->exact = exact_rows;
}

/* Times the candidates, each timed call checked (point_check). Returns 1 if every one that was
   not refused got a run, 0 if the point must be left out for the budget, -1 if every candidate
   failed when it ran, -2 if every one was refused here (*inexact: how many were found inexact,
   *faulty: how many cheated). */
static int time_point(profile_run *r, prof_grid_class *gc, int64_t rr, size_t ri,
                      const txattn_problem *p, prof_cand *c, size_t *n, size_t *inexact,
                      size_t *faulty) {
  txattn_tensors t = TXATTN_TENSORS_INIT, dense = TXATTN_TENSORS_INIT;
  point_rows pr = {
      .r = r, .gc = gc, .rr = rr, .ri = ri, .p = TXATTN_PROBLEM_INIT}; /* ragged kept */
  prof_run_check chk;
  size_t untimed = 0, asked = *n;
  *inexact = *faulty = 0;
  if (tensors_for(r, p, &t, &dense) != 0) return 0;
  point_check(r, &pr, p, &dense, &chk);
  const prof_mode_knobs *m = &prof_modes[r->mode];
  txattn_status s = prof_time(c, n, &t, m->min_run_s, m->runs, deadline(r), &chk, &untimed);
  prof_rows_free(pr.rows);
  *inexact = pr.dropped - pr.faulty;
  *faulty = pr.faulty;
  if (s != TXATTN_OK) {
    prof_progress_end(&r->prog);
    tx_print_lib_error("profile", "a candidate failed and is left out", s);
  }
  if (untimed > 0) { /* the budget's end came first: a point without them would mislead */
    prof_candidates_free(c, *n);
    *n = 0;
    return 0;
  }
  if (*n == 0) return pr.dropped == asked ? -2 : -1;
  return 1;
}

static void describe_point(const prof_grid_class *gc, int64_t n, int64_t rr, char *buf,
                           size_t size) {
  char d[96];
  txattn_table_class_describe(&gc->cls, d, sizeof d);
  int len = snprintf(buf, size, "%s n=%lld", d, (long long)n);
  if (rr && len > 0 && (size_t)len < size)
    snprintf(buf + len, size - (size_t)len, " r=%lld", (long long)rr);
}

/* A point that does not fit the budget: left out, with every larger n of its series. */
static void leave_out(profile_run *r, prof_grid_class *gc, prof_series *se) {
  se->stopped = 1;
  r->n_skipped++;
  gc->fate.over_budget++;
}

/* Whether candidate c lost by PROF_LOSER_RATIO at an earlier point of the series. */
static int lost(const prof_series *se, const prof_cand *c) {
  for (size_t k = 0; k < se->n_last; k++)
    if (se->last[k].kernel == c->kernel && se->last[k].slot == c->slot) return se->last[k].lost;
  return 0;
}

/* After a point: its candidates' times, which of them lost by PROF_LOSER_RATIO (their fastest run
   against the winner's median), and the candidates that lost before, which stay lost. */
static void learn(prof_series *se, double pairs, const prof_cand *c, size_t nc) {
  double best = INFINITY;
  size_t m = 0;
  for (size_t i = 0; i < nc; i++) best = fmin(best, c[i].time_s);
  for (size_t k = 0; k < se->n_last; k++) /* the lost ones first: no candidate of the point */
    if (se->last[k].lost) se->last[m++] = se->last[k];
  for (size_t i = 0; i < nc && m < PROF_MAX_CANDS; i++, m++) {
    se->last[m].kernel = c[i].kernel;
    se->last[m].slot = c[i].slot;
    se->last[m].time_s = c[i].time_s;
    se->last[m].lost = c[i].fastest_s > PROF_LOSER_RATIO * best;
  }
  se->n_last = m;
  se->pairs = pairs;
}

/* The least seconds the timing of a point takes, foreseen from its series' last point: each
   candidate not lost, its call grown with the visible pairs, for its first call, its calibration
   and the check after its runs (three calls or min_run_s runs, whichever is longer); its runs stop at the budget's end (tx_time's
   deadline). 0 at a series' first point. */
static double foresee(const profile_run *r, const prof_series *se, double pairs) {
  double s = 0;
  for (size_t i = 0; i < se->n_last && se->pairs > 0; i++)
    if (!se->last[i].lost)
      s += 3 * fmax(se->last[i].time_s * pairs / se->pairs, prof_modes[r->mode].min_run_s);
  return s;
}

/* Checks, times and records the point (class ci, n index ni, r index ri). A point whose timing
   (foresee) would not end before the budget's end is left out with every larger n of its series:
   its class stops there, the others go on. */
static void measure_point(profile_run *r, size_t ni, size_t ci, size_t ri) {
  prof_grid_class *gc = &r->g.cls[ci];
  prof_series *se = &gc->series[ri];
  const int64_t *rs;
  prof_grid_rs(&r->g, gc, &rs);
  int64_t n = r->g.n[ni], rr = rs[ri];
  txattn_problem p = prof_grid_problem(gc, n, rr);
  double started = tx_clock(), pairs = prof_grid_pairs(&p), left = deadline(r) - started;
  double foreseen = foresee(r, se, pairs);
  r->prog.done++;
  if (se->stopped || foreseen > left || left <= 0) {
    leave_out(r, gc, se);
    return;
  }
  char what[160];
  describe_point(gc, n, rr, what, sizeof what);
  prof_progress_show(&r->prog, what);
  prof_cand c[PROF_MAX_CANDS];
  prof_plan_failures pf;
  txattn_context *ctx = r->g.ctx[gc->ctx];
  size_t nc = prof_candidates(ctx, &p, prof_modes[r->mode].variants, 1, c, PROF_MAX_CANDS, &pf);
  size_t kept = 0;
  for (size_t i = 0; i < nc; i++) /* the candidates that lost by PROF_LOSER_RATIO are left out */
    if (lost(se, &c[i]))
      txattn_plan_free(c[i].plan);
    else
      c[kept++] = c[i];
  nc = kept;
  if (r->update) nc = prof_update_candidates(r, gc, &p, n, rr, c, nc, PROF_MAX_CANDS, &pf);
  if (pf.n > 0) plan_failures(r, gc, n, rr, &pf, what);
  size_t inexact, faulty, inexact_here = 0, faulty_timed = 0;
  nc = keep_trusty(r, gc, n, rr, &p, c, nc, foreseen, &inexact, &faulty);
  int timed = nc > 0 ? time_point(r, gc, rr, ri, &p, c, &nc, &inexact_here, &faulty_timed) : -2;
  inexact += inexact_here;
  faulty += faulty_timed;
  if (timed == -2) {
    gc->fate.no_candidate++;
    gc->fate.inexact += inexact;
    gc->fate.faulty += faulty;
    gc->fate.plan_failed += pf.n;
  } else if (timed == -1) {
    gc->fate.failed++;
  } else if (timed == 0) {
    leave_out(r, gc, se);
  } else {
    learn(se, pairs, c, nc);
    r->levels[r->n_levels - 1].spent_s += tx_clock() - started;
    r->levels[r->n_levels - 1].points++;
    record(r, gc, n, rr, c, nc);
  }
  prof_candidates_free(c, nc);
}

/* CPUs paired with the first for the core round trip at each n (core_latency.h), each a short
   probe (docs/measurements.md). */
#define ROUND_TRIP_PAIRS 4

/* Every class at one n before any at the next, so a budget that runs out costs the largest n. */
static void measure_all(profile_run *r) {
  prof_progress_init(&r->prog, prof_grid_points(&r->g), r->budget_s);
  r->prog.start = r->start;
  for (size_t ni = 0; ni < r->g.n_n; ni++) {
    prof_level *L = &r->levels[r->n_levels++];
    *L = (prof_level){.n = r->g.n[ni]};
    /* how far apart the CPUs are now: a host can move them for minutes at a time */
    L->trip_ns = r->g.n_ctx > 1 ? tx_core_round_trip_ns(ROUND_TRIP_PAIRS) : -1;
    for (size_t ci = 0; ci < r->g.n_cls; ci++) {
      const int64_t *rs;
      size_t n_r = prof_grid_rs(&r->g, &r->g.cls[ci], &rs);
      for (size_t ri = 0; ri < n_r; ri++) /* beyond the class's n range, or not in --update's */
        if (prof_grid_has_point(&r->g, &r->g.cls[ci], ni, ri)) measure_point(r, ni, ci, ri);
    }
    L->trip_end_ns = r->g.n_ctx > 1 ? tx_core_round_trip_ns(ROUND_TRIP_PAIRS) : -1;
  }
  prof_progress_end(&r->prog);
  free_bufs(r);
}

/* ---- the table ---- */

static const char *plural(size_t n) {
  return n == 1 ? "" : "s";
}

/* Why class gc has no point in the table: what became of each of its points. */
static void why_left_out(const profile_run *r, const prof_grid_class *gc, char *buf, size_t size) {
  const prof_class_fate *f = &gc->fate;
  size_t used = 0;
  buf[0] = '\0';
#define SAY(...)                                                                                   \
  do {                                                                                             \
    if (used < size) used += (size_t)snprintf(buf + used, size - used, __VA_ARGS__);               \
  } while (0)
  if (f->over_budget)
    SAY("%zu point%s over the %g s budget", f->over_budget, plural(f->over_budget), r->budget_s);
  if (f->no_candidate) {
    SAY("%s%zu point%s with no candidate left to time (%zu inexact, ", used ? "; " : "",
        f->no_candidate, plural(f->no_candidate), f->inexact);
    if (f->faulty) SAY("%zu crashed, hung or printed on their check, ", f->faulty);
    SAY("%zu failed to plan; every other kernel declined)", f->plan_failed);
  }
  if (f->failed)
    SAY("%s%zu point%s where every candidate failed when it ran", used ? "; " : "", f->failed,
        plural(f->failed));
  if (f->refused)
    SAY("%s%zu point%s the table refused, the first: %s", used ? "; " : "", f->refused,
        plural(f->refused), f->refused_why);
  if (used == 0) SAY("no point of it was measured");
#undef SAY
}

/* Each class left out of the table, with why. */
static void say_classes_left_out(const profile_run *r, FILE *f) {
  for (size_t i = 0; i < r->g.n_cls; i++) {
    const prof_grid_class *gc = &r->g.cls[i];
    if (gc->fate.recorded > 0) continue;
    char d[96], why[512];
    txattn_table_class_describe(&gc->cls, d, sizeof d);
    why_left_out(r, gc, why, sizeof why);
    fprintf(f, "  %s: %s\n", d, why);
  }
}

/* The kernels excluded for crashing, hanging or printing on a check or at a timed point. */
static void say_faulty_kernels(const profile_run *r, FILE *f) {
  for (size_t k = 0, said = 0; k < r->n_notes; k++) {
    const prof_kernel_note *x = &r->notes[k];
    if (x->fault == PROF_FAULT_NONE) continue;
    if (!said++)
      fprintf(f, "\nkernels excluded for what they did on a check or at a timed point (the "
                 "table's exclusions list each candidate):\n");
    fprintf(f, "  %s: %zu candidate%s, the first in %s: %s%s\n", x->name, x->count,
            plural(x->count), x->first_at, x->first_why,
            x->left_out ? "; left out of the rest of the profile" : "");
  }
}

static int write_table(profile_run *r) {
  char path[4096];
  if (r->out)
    snprintf(path, sizeof path, "%s", r->out);
  else if (txattn_table_default_path(path, sizeof path) != TXATTN_OK) {
    fprintf(stderr, "txtune profile: %s\n", txattn_last_error());
    return TX_EXIT_FAIL;
  }
  txattn_status s = txattn_table_write(r->table, path);
  if (s != TXATTN_OK) {
    tx_print_lib_error("profile", "cannot write the table", s);
    return TX_EXIT_FAIL;
  }
  printf("wrote %s: %zu points", path, r->n_points);
  if (r->n_skipped) printf(" (%zu left out: over the %g s budget)", r->n_skipped, r->budget_s);
  if (r->n_classes_out)
    printf(", %zu class%s of %zu left out", r->n_classes_out, r->n_classes_out == 1 ? "" : "es",
           r->g.n_cls);
  printf(", %zu candidates excluded as inexact, %zu kernel%s failed to plan", r->n_excluded,
         r->n_failed_kernels, r->n_failed_kernels == 1 ? "" : "s");
  for (int f = PROF_FAULT_CRASHED; f < PROF_FAULT_COUNT_; f++)
    if (r->n_faulty_by[f])
      printf(", %zu kernel%s %s", r->n_faulty_by[f], r->n_faulty_by[f] == 1 ? "" : "s",
             fault_word((prof_fault)f));
  printf(", in %.1f s\n", prof_now_s(r));
  if (r->n_inexact_at_point)
    printf("%zu of the inexact candidates passed their check (n = %lld) and were found inexact at "
           "a timed point (its sampled rows against the reference)\n",
           r->n_inexact_at_point, (long long)PROF_CHECK_N);
  say_faulty_kernels(r, stdout);
  if (r->n_classes_out)
    printf("\nclasses left out of the table (no point of theirs is in it; libtxattn uses its "
           "estimate for them):\n");
  if (!r->update) say_classes_left_out(r, stdout); /* --update keeps the table's classes */
  if (r->g.n_skipped)
    printf("\n16-bit classes not measured (libtxattn uses its estimate for them):\n");
  for (size_t i = 0; i < r->g.n_skipped; i++)
    printf("  %s: %s\n", r->g.skipped[i].cls, r->g.skipped[i].why);
  if (r->n_failed_kernels == 0) return TX_EXIT_OK;
  printf("\nkernels that failed to plan points (left out of each; the table's exclusions list "
         "every one, `txtune show` with the reason):\n");
  for (size_t k = 0; k < r->n_notes; k++)
    if (r->notes[k].fault == PROF_FAULT_NONE)
      printf("  %s: %zu point%s, the first %s: %s\n", r->notes[k].name, r->notes[k].count,
             plural(r->notes[k].count), r->notes[k].first_at, r->notes[k].first_why);
  return TX_EXIT_OK;
}

/* A core round trip that moved while the profile measured: its threaded points measured two
   machines. */
static void say_round_trip(const profile_run *r) {
  double lo = -1, hi = -1;
  int64_t n_lo = 0, n_hi = 0;
  for (size_t i = 0; i < r->n_levels; i++) {
    const prof_level *L = &r->levels[i];
    const double trip[2] = {L->trip_ns, L->trip_end_ns};
    for (int k = 0; k < 2 && L->points > 0; k++) {
      if (trip[k] < 0) continue;
      if (lo < 0 || trip[k] < lo) lo = trip[k], n_lo = L->n;
      if (hi < 0 || trip[k] > hi) hi = trip[k], n_hi = L->n;
    }
  }
  if (lo > 0 && hi >= TX_CORE_ROUND_TRIP_CHANGE * lo)
    fprintf(stderr,
            "txtune profile: a cache line's round trip between two CPUs took %.0f ns at n = %lld "
            "and %.0f ns at n = %lld: the CPUs moved while it measured (a virtual machine's host "
            "can do that), and its %d-thread points measured both\n",
            lo, (long long)n_lo, hi, (long long)n_hi, r->g.threads[r->g.n_ctx - 1]);
}

/* Other processes busy on the CPUs: every timing measures them too, threaded kernels' most ("Beside
   a busy process", docs/measurements.md). Said before the first point, from OTHERS_SAMPLE_S of
   sleep, and after the last, over the whole run; the header records both. */
#define OTHERS_SAMPLE_S 0.2

static void say_others(const char *when, double others, double steal) {
  if (others >= TX_CPU_OTHERS_WARN)
    fprintf(stderr,
            "txtune profile: %s, other processes used %.2f cores' worth of the CPUs: the timings "
            "measure them too (threaded kernels most), and a table profiled so may not hold on a "
            "quiet machine\n",
            when, others);
  if (steal >= TX_CPU_OTHERS_WARN)
    fprintf(stderr,
            "txtune profile: %s, the hypervisor gave %.2f cores' worth of this machine's CPUs to "
            "other guests: the timings measure that too\n",
            when, steal);
}

/* The machine's roofs, which no timed call may beat (point_floor): the caches' bytes (each level
   per core, the larger of the library's value and hwloc's, times the cores) and the read
   bandwidth of every hardware thread. */
static void measure_ceiling(profile_run *r) {
  txattn_machine_info m = TXATTN_MACHINE_INFO_INIT;
  double cache = 0;
  if (txattn_context_machine(r->g.ctx[0], &m) == TXATTN_OK)
    cache = (double)m.n_cores *
            ((double)fmax(m.l1d_bytes, m.hw_l1d_bytes) + (double)fmax(m.l2_bytes, m.hw_l2_bytes) +
             (double)fmax(m.l3_bytes, m.hw_l3_bytes));
  tx_roof_ceiling_measure(m.isa_mask, m.n_pus > 0 ? m.n_pus : 1, cache, &r->ceiling);
}

static int run_profile(profile_run *r) {
  r->start = tx_clock(); /* the budget covers the whole command */
  settings(r);
  tx_cpu_use_sample(OTHERS_SAMPLE_S, &r->others_before, &r->steal_before);
  say_others("before the first point", r->others_before, r->steal_before);
  tx_cpu_use_now(&r->use_start);
  int rc = r->update ? prof_update_start(r)
                     : prof_grid_build(&r->g, &r->spec, &r->threads, &r->d, &r->dtypes, r->n_max,
                                       r->mode, r->plugin_path);
  if (rc) return rc == -2 ? TX_EXIT_OK : rc;
  if (txattn_kernel_count(r->g.ctx[0]) == 0) { /* not "nothing measured within the budget" */
    fprintf(stderr, "txtune profile: no kernel was found on the plugin path, so nothing can be "
                    "measured ('txtune list' shows why)\n");
    return TX_EXIT_FAIL;
  }
  txattn_status s = txattn_table_create(r->g.ctx[0], &r->table);
  if (s != TXATTN_OK) {
    tx_print_lib_error("profile", "cannot start a table", s);
    return TX_EXIT_FAIL;
  }
  measure_ceiling(r);
  if (!r->update || prof_update_kernels(r) > 0) measure_all(r);
  if (r->n_points == 0 && !r->update) {
    fprintf(stderr, "txtune profile: nothing was measured, so no table is written:\n");
    say_classes_left_out(r, stderr);
    say_faulty_kernels(r, stderr);
    return TX_EXIT_FAIL;
  }
  tx_cpu_use end;
  tx_cpu_use_now(&end);
  tx_cpu_use_others(&r->use_start, &end, &r->others_during, &r->steal_during);
  /* a class with no point joined the table but is not written (txattn_table_write) */
  for (size_t i = 0; i < r->g.n_cls && !r->update; i++)
    r->n_classes_out += r->g.cls[i].fate.recorded == 0;
  prof_set_header(r, prof_now_s(r));
  if (r->update && (rc = prof_update_finish(r)) != 0) return rc;
  if ((rc = write_table(r)) != 0) return rc;
  say_others("while it measured", r->others_during, r->steal_during);
  say_round_trip(r);
  printf("\nwho wins where (time: the winner's median per call; vs masked: how much faster than "
         "the dense OpenBLAS kernel):\n");
  prof_summary(r->table, stdout);
  return TX_EXIT_OK;
}

int tx_cmd_profile(int argc, char **argv) {
  profile_run *r = calloc(1, sizeof *r);
  if (!r) return TX_EXIT_FAIL;
  int rc = parse(r, argc, argv);
  if (rc < 0) rc = run_profile(r);
  prof_update_free(r->up);
  txattn_table_free(r->table);
  free(r->checked);
  prof_grid_free(&r->g);
  tx_strlist_free(&r->threads);
  tx_strlist_free(&r->d);
  tx_strlist_free(&r->dtypes);
  free(r);
  return rc;
}
