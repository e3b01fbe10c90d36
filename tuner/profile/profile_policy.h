/* SPDX-License-Identifier: MIT */
/* txtune profile's policy: every knob that decides how a point is timed, which candidates are
   timed again and which one wins, in one struct with its values (prof_policy, profile_policy.c),
   and the rule that picks a point's winner (prof_choose). docs/profiling.md lists the same knobs
   ("The rules in one list"); docs/measurements.md ("Profiling method") has the evidence.

   Warm-up: the untimed calls of a candidate right before each of its timed runs, so that no run
   starts in the caches another candidate left: one call; and where the run before was of the other
   kind (one thread against several), calls for warm_up_s first, since OpenMP threads spin for a few
   milliseconds after a region and a sleeping team is slow to wake. A candidate whose call takes
   more than warm_up_max_call_s gets none. A candidate's first call is not warm-up: it is timed, to
   predict the repetitions per run. */
#ifndef TXTUNE_PROFILE_POLICY_H
#define TXTUNE_PROFILE_POLICY_H

#include <stddef.h>
#include <stdint.h>

typedef enum prof_mode { PROF_QUICK, PROF_DEFAULT, PROF_PATIENT } prof_mode;

/* How hard one point is measured; set by the mode. */
typedef struct prof_settings {
  prof_mode mode;
  double min_run_s;     /* one timed run lasts at least this long */
  int rounds;           /* the most timed runs per candidate, taken round-robin */
  double prune_ratio;   /* after each round, a candidate whose fastest run is slower than this x
                           the leader's median stops there (rough; first_prune_ratio if larger
                           after the first round) */
  int variants;         /* 0: default tunables only; 1: plus one; 2: a grid (patient) */
  int one_loop_once;    /* on one thread, a kernel that names its one-thread twin (txattn/plugin.h:
                           one_thread_same_as) is left to the twin where that one is there
                           (prof_twin_stands_in); validate times both */
  double confirm_share; /* confirming rough candidates beyond the near ties may cost this
                           fraction of a point's timing */
} prof_settings;

/* When a candidate that lost at its last points is timed less at the next (prof_effort): the
   cutoff ratio is long_ratio where the last winner's time, scaled to this point, is long_call_s
   or more, short_ratio below. */
typedef struct prof_cutoff {
  double short_ratio, long_ratio, long_call_s;
} prof_cutoff;

/* A knob with one value between candidates on one thread each and another where either of the
   two runs on several threads, whose speed drifts far more ("Threaded drift"). */
typedef struct prof_pair_knob {
  double single, threaded;
} prof_pair_knob;

/* What a mode sets (prof_policy.modes[mode]). */
typedef struct prof_mode_knobs {
  prof_settings s;
  prof_cutoff cutoff;
  int visits;      /* visits of a close call after the point's own runs */
  double budget_s; /* the whole profile's time, a hard cap, unless --budget says */
} prof_mode_knobs;

typedef struct prof_knobs {
  /* timing one point (profile_measure.c) */
  double run_margin;         /* a run's repetitions are planned to last this x min_run_s */
  double warm_up_s;          /* the warm-up after a run of the other kind lasts this long */
  double warm_up_max_call_s; /* no warm-up for a candidate whose call takes longer */
  double first_prune_ratio;  /* after the first round, prune at this x the leader at the least */
  double stall_ratio;        /* a single run this x slower than expected is a stall: run again */
  /* confirmation of rough candidates (profile_measure.c) */
  prof_pair_knob confirm_ratio; /* a rough one within this x the leader in full is confirmed */
  int confirm_pairs;            /* pairs of runs that confirm it (at most PROF_MAX_RUNS) */
  /* ties (prof_choose) */
  double tie_min;         /* within this fraction of the fastest is always a tie */
  prof_pair_knob tie_max; /* beyond it never (and within it a rough one is always confirmed) */
  /* close calls timed again later (profile_revisit.c) */
  prof_pair_knob close;      /* a contender is within this fraction of the point's leader */
  double revisit_max_call_s; /* only points whose leader's call is this short stay open */
  double revisit_share;      /* visits after an n may use this share of the plan's slack */
  int visit_runs;            /* timed runs of each contender per visit */
  /* the plan across points (profile_plan.c, cmd_profile.c) */
  int min_runs;                /* the fewest runs a planned candidate gets: a median and a spread */
  double max_target_s;         /* the most seconds of runs a candidate is planned */
  double plan_fill;            /* the plan fills this share of the budget */
  double end_reserve;          /* no call may end within this share of the budget before its end */
  double end_reserve_min_s;    /* nor within this many seconds */
  double optional_share;       /* optional candidates may use this share of the slack */
  double optional_max_call_s;  /* with calls this long at most */
  double optional_max_ratio;   /* when they lost by this x at most */
  int recheck_growth;          /* or, threaded, when n grew this x since they were last timed */
  double scale_min_point_s;    /* the model's correction learns from points predicted this long */
  double scale_decay;          /* an older point weighs this much less at each newer one */
  double scale_min, scale_max; /* the correction's range */
  /* exactness (cmd_profile.c, profile_isolate.c) */
  int64_t check_n;        /* n of the small shape each candidate must be exact on */
  int check_rows;         /* rows of every timed point each candidate's first call is checked on */
  double check_row_work;  /* at most: fewer rows (2 at least) where they would hold more than this
                             many visible keys x (d_qk + d_v), the reference's work on them */
  double check_timeout_s; /* the check process's answer (its start, a check) waits this long at
                               most, */
  double check_timeout_share; /* or this share of the budget if less, */
  double check_timeout_min_s; /* but at least this long (and never past the budget's end) */
  double floor_slack;         /* a timed call is refused as impossible when its time implies this
                                 x the machine's roofs (tx_roof_floor_s) */
  prof_mode_knobs modes[3];   /* by prof_mode */
} prof_knobs;

extern const prof_knobs prof_policy;

typedef struct prof_cand prof_cand;

/* k's value for the pair a, b: k.threaded where either runs on several threads, else k.single. */
double prof_pair(prof_pair_knob k, const prof_cand *a, const prof_cand *b);
/* Timed in full: a median of runs with a spread; not rough (pruned, one run). A confirmed
   candidate is timed in full. */
int prof_in_full(const prof_cand *c);

/* The winner of a point: the fastest timed candidate (n_runs > 0), unless others are within the
   noise of it: within (1 + tol) x its time, tol the larger spread of the two (none for a rough
   one) kept within tie_min .. tie_max. Among those the preferred one wins: first, one timed in
   full (a rough time never takes a tie; prof_time has confirmed, as it could, the rough ones
   within confirm_ratio, which makes them timed in full); then, where neither runs on several
   threads, a kernel that starts no threads; then the kernel's default tunables; then the faster;
   then by name and slot, so that the order is total. Where either runs on several threads the
   tie reaches tie_max.threaded and starting no threads is no preference: a single-thread kernel
   ties with a threaded one only while the other CPU happens to give the threads little. Same code
   under two names, or two tiles a few percent apart, are ties that two profiles would otherwise
   settle by the noise of the moment ("Tie limits", "Rough times never win a tie", "No preference
   for no threads beside a threaded kernel", docs/measurements.md). */
size_t prof_choose(const prof_cand *c, size_t n);
/* The same among the timed candidates of one kernel (its tile variants); n if there is none. */
size_t prof_choose_kernel(const prof_cand *c, size_t n, size_t kernel);

#endif
