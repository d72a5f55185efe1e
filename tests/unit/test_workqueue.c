/* SPDX-License-Identifier: MIT */
/*
 * The work queue (common/workqueue.h): results in submission order for any
 * worker count, per-worker contexts made and freed once on their own
 * thread, job errors reaching the submitter, detached jobs that spawn more
 * and free themselves, stop with jobs still queued, and a stress run for
 * lost wakeups. A hang is a failure: a watchdog (alarm) ends the process
 * instead of letting `make test` block. Worker threads never call CHECK
 * (its counters are not atomic); they count problems in `bad`, which the
 * main thread checks.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include "check.h"
#include "common/workqueue.h"

static atomic_uint bad, nr_init, nr_exit, started;
static atomic_ulong ctx_jobs;		/* jobs counted by the contexts */

static const char *phase = "start";

static void on_alarm(int sig)
{
	(void)sig;
	/* only async-signal-safe calls here */
	if (write(2, "test_workqueue: timed out in ", 29) < 0 ||
	    write(2, phase, strlen(phase)) < 0 || write(2, "\n", 1) < 0)
		_exit(3);
	_exit(2);
}

/* Arms the watchdog for one phase: a lost wakeup hangs, the alarm fails. */
static void watchdog(const char *name, unsigned int secs)
{
	phase = name;
	alarm(secs);
}

/* Per-worker context: remembers its thread, so a job can tell it is its own. */
struct wctx {
	pthread_t self;
	unsigned long jobs;
};

/* Every other init fails when arg says so: jobs then see a NULL context. */
static void *ctx_init(void *arg)
{
	unsigned int n = atomic_fetch_add(&nr_init, 1);
	struct wctx *c;

	if (arg && n % 2)
		return NULL;
	c = calloc(1, sizeof(*c));
	if (c)
		c->self = pthread_self();
	return c;
}

static void ctx_exit(void *p)
{
	struct wctx *c = p;

	if (!pthread_equal(c->self, pthread_self()))
		atomic_fetch_add(&bad, 1);
	atomic_fetch_add(&ctx_jobs, c->jobs);
	atomic_fetch_add(&nr_exit, 1);
	free(c);
}

struct tjob {
	struct kiln_job job;		/* first: the queue hands this back */
	uint64_t in, out;
	unsigned int spin, runs, seq;
	int err;
};

static uint64_t mix(uint64_t v)
{
	return (v ^ 0xdeadbeefcafef00dull) * 0x9e3779b97f4a7c15ull;
}

/* Random durations: mostly short spins, now and then a sleep. */
static void busy(unsigned int spin)
{
	if (spin % 16 == 0) {
		struct timespec ts = { 0, (long)(spin % 200) * 1000 };

		nanosleep(&ts, NULL);
		return;
	}
	for (volatile unsigned int i = 0; i < spin; i++)
		;
}

static void tjob_fn(struct kiln_job *job, void *ctx)
{
	struct tjob *t = (struct tjob *)job;
	struct wctx *c = ctx;

	t->seq = atomic_fetch_add(&started, 1);
	t->runs++;
	busy(t->spin);
	if (!c) {			/* the job reports a failed init */
		t->err = -ENOMEM;
		return;
	}
	if (!pthread_equal(c->self, pthread_self()))
		atomic_fetch_add(&bad, 1);
	c->jobs++;
	t->out = mix(t->in);
	t->err = t->in % 97 == 0 ? -EIO : 0;	/* some jobs fail */
}

static void reset_counters(void)
{
	atomic_store(&bad, 0);
	atomic_store(&nr_init, 0);
	atomic_store(&nr_exit, 0);
	atomic_store(&started, 0);
	atomic_store(&ctx_jobs, 0);
}

static void fill_jobs(struct tjob *j, unsigned int n, unsigned int maxspin)
{
	for (unsigned int i = 0; i < n; i++) {
		j[i] = (struct tjob){ .job.fn = tjob_fn, .in = rnd() };
		j[i].spin = (unsigned int)(rnd() % maxspin);
	}
}

/* What the submitter sees of job i once it waited for it. */
static bool job_ok(const struct tjob *t, bool have_ctx)
{
	if (!t->job.done || t->runs != 1)
		return false;
	if (!have_ctx)
		return t->err == -ENOMEM;
	return t->out == mix(t->in) && t->err == (t->in % 97 ? 0 : -EIO);
}

/*
 * n jobs, at most window in flight (as zdata's ring does), waited for in
 * submission order; results and errors must match each job's own input.
 */
static void order_run(unsigned int workers, unsigned int n,
		      unsigned int window)
{
	struct kiln_workqueue wq;
	struct tjob *j = calloc(n, sizeof(*j));
	unsigned int sub = 0, good = 0, inorder = 1;

	reset_counters();
	fill_jobs(j, n, 4000);
	CHECK(kiln_wq_start(&wq, workers, ctx_init, ctx_exit, NULL) == 0);
	for (unsigned int i = 0; i < n; i++) {
		while (sub < n && sub < i + window)
			kiln_wq_submit(&wq, &j[sub++].job);
		kiln_wq_wait(&wq, &j[i].job);
		good += job_ok(&j[i], true);
		/* one worker must run the jobs in queue (FIFO) order */
		if (workers == 1 && j[i].seq != i)
			inorder = 0;
	}
	kiln_wq_stop(&wq);
	CHECK(good == n);
	CHECK(inorder);
	CHECK(atomic_load(&bad) == 0);
	CHECK(atomic_load(&nr_init) == workers);
	CHECK(atomic_load(&nr_exit) == workers);
	CHECK(atomic_load(&ctx_jobs) == n);
	free(j);
}

/* Failed inits: their workers' jobs get NULL; exit only for real contexts. */
static void failed_init_run(unsigned int workers)
{
	struct kiln_workqueue wq;
	unsigned int n = 2000, good = 0, nulls = 0;
	struct tjob *j = calloc(n, sizeof(*j));

	reset_counters();
	fill_jobs(j, n, 2000);
	CHECK(kiln_wq_start(&wq, workers, ctx_init, ctx_exit, "fail") == 0);
	for (unsigned int i = 0; i < n; i++)
		kiln_wq_submit(&wq, &j[i].job);
	for (unsigned int i = 0; i < n; i++) {
		kiln_wq_wait(&wq, &j[i].job);
		nulls += j[i].err == -ENOMEM;
		good += job_ok(&j[i], j[i].err != -ENOMEM);
	}
	kiln_wq_stop(&wq);
	CHECK(good == n);
	CHECK(atomic_load(&nr_init) == workers);
	CHECK(atomic_load(&nr_exit) == workers - workers / 2);
	CHECK(atomic_load(&ctx_jobs) + nulls == n);
	free(j);
}

/*
 * Stop with most jobs still queued: it must return (no hang), every job
 * must have run exactly once (stop lets the queue drain: callers free
 * their jobs after it) and nothing may leak (LeakSanitizer at exit).
 */
static void stop_pending_run(unsigned int workers)
{
	struct kiln_workqueue wq;
	unsigned int n = 3000, once = 0;
	struct tjob *j = calloc(n, sizeof(*j));

	reset_counters();
	fill_jobs(j, n, 3000);
	CHECK(kiln_wq_start(&wq, workers, ctx_init, ctx_exit, NULL) == 0);
	for (unsigned int i = 0; i < n; i++)
		kiln_wq_submit(&wq, &j[i].job);
	kiln_wq_stop(&wq);
	for (unsigned int i = 0; i < n; i++)
		once += j[i].runs == 1 && j[i].job.done;
	CHECK(once == n);
	CHECK(atomic_load(&nr_exit) == workers);
	free(j);
}

/*
 * Detached jobs: each spawns two children up to a depth, then frees
 * itself (ASan catches the queue touching it afterwards); drain must
 * wait for the whole tree.
 */
struct djob {
	struct kiln_job job;
	struct kiln_workqueue *wq;
	unsigned int depth;
};

static atomic_uint detached_runs;

static void djob_fn(struct kiln_job *job, void *ctx)
{
	struct djob *d = (struct djob *)job;

	(void)ctx;
	atomic_fetch_add(&detached_runs, 1);
	for (int k = 0; k < 2 && d->depth; k++) {
		struct djob *c = malloc(sizeof(*c));

		*c = (struct djob){ .job = { .fn = djob_fn, .detached = true },
				    .wq = d->wq, .depth = d->depth - 1 };
		kiln_wq_submit(d->wq, &c->job);
	}
	free(d);
}

static void detached_run(unsigned int workers, unsigned int rounds)
{
	struct kiln_workqueue wq;
	unsigned int depth = 9, ok = 0;

	CHECK(kiln_wq_start(&wq, workers, NULL, NULL, NULL) == 0);
	for (unsigned int r = 0; r < rounds; r++) {
		struct djob *d = malloc(sizeof(*d));

		atomic_store(&detached_runs, 0);
		*d = (struct djob){ .job = { .fn = djob_fn, .detached = true },
				    .wq = &wq, .depth = depth };
		kiln_wq_submit(&wq, &d->job);
		kiln_wq_drain(&wq);
		ok += atomic_load(&detached_runs) == (2u << depth) - 1;
	}
	kiln_wq_stop(&wq);
	CHECK(ok == rounds);
}

/*
 * Lost wakeups: several submitters share one queue, each alternating
 * one-job round trips with small bursts and waiting only for its own
 * jobs. A wakeup given to the wrong waiter (signal for broadcast), or one
 * missed between the check and the sleep, leaves a waiter asleep forever.
 */
struct submitter {
	struct kiln_workqueue *wq;
	unsigned int rounds, failures;
	uint64_t seed;
};

static void *submitter_main(void *p)
{
	struct submitter *s = p;
	struct tjob j[8];

	for (unsigned int r = 0; r < s->rounds; r++) {
		unsigned int burst = r % 3 ? 1 : 8;

		for (unsigned int i = 0; i < burst; i++) {
			j[i] = (struct tjob){ .job.fn = tjob_fn,
					      .in = s->seed + r * 8 + i,
					      .spin = (r * 7 + i) % 300 | 1 };
			kiln_wq_submit(s->wq, &j[i].job);
		}
		for (unsigned int i = 0; i < burst; i++) {
			kiln_wq_wait(s->wq, &j[i].job);
			s->failures += !job_ok(&j[i], true);
		}
	}
	return NULL;
}

static void stress_run(unsigned int workers, unsigned int nsub,
		       unsigned int rounds)
{
	struct kiln_workqueue wq;
	struct submitter s[4];
	pthread_t t[4];
	unsigned int failures = 0;

	reset_counters();
	CHECK(kiln_wq_start(&wq, workers, ctx_init, ctx_exit, NULL) == 0);
	for (unsigned int i = 0; i < nsub; i++) {
		s[i] = (struct submitter){ .wq = &wq, .rounds = rounds,
					   .seed = rnd() };
		CHECK(pthread_create(&t[i], NULL, submitter_main, &s[i]) == 0);
	}
	for (unsigned int i = 0; i < nsub; i++) {
		pthread_join(t[i], NULL);
		failures += s[i].failures;
	}
	kiln_wq_drain(&wq);		/* nothing pending: must not block */
	kiln_wq_stop(&wq);
	CHECK(failures == 0);
	CHECK(atomic_load(&bad) == 0);
}

/*
 * The same, made likely rather than left to chance: waiter A sleeps first
 * on a slow job, waiter B then on a fast one. When B's job ends, a single
 * signal goes to the longest sleeper, A, who finds its job not done and
 * sleeps again while B sleeps on; A's job then wakes B, and A never wakes.
 * Only a broadcast wakes both.
 */
struct waiter {
	struct kiln_workqueue *wq;
	struct tjob *job;
};

static void *waiter_main(void *p)
{
	struct waiter *w = p;

	kiln_wq_submit(w->wq, &w->job->job);
	kiln_wq_wait(w->wq, &w->job->job);
	return NULL;
}

static void sleep_us(long us)
{
	struct timespec ts = { 0, us * 1000 };

	nanosleep(&ts, NULL);
}

static void two_waiters_run(unsigned int reps)
{
	struct kiln_workqueue wq;
	unsigned int ok = 0;

	CHECK(kiln_wq_start(&wq, 2, NULL, NULL, NULL) == 0);
	for (unsigned int r = 0; r < reps; r++) {
		/* spin % 16 == 0: busy() sleeps spin % 200 us */
		struct tjob a = { .job.fn = tjob_fn, .in = 1, .spin = 192 };
		struct tjob b = { .job.fn = tjob_fn, .in = 2, .spin = 48 };
		struct waiter wa = { &wq, &a };
		pthread_t t;

		CHECK(pthread_create(&t, NULL, waiter_main, &wa) == 0);
		sleep_us(20 + r % 40);	/* A asleep in kiln_wq_wait first */
		kiln_wq_submit(&wq, &b.job);
		kiln_wq_wait(&wq, &b.job);
		pthread_join(t, NULL);
		ok += a.runs == 1 && b.runs == 1;
	}
	kiln_wq_stop(&wq);
	CHECK(ok == reps);
}

int main(void)
{
	static const unsigned int workers[] = { 1, 2, 8 };

	signal(SIGALRM, on_alarm);
	rng_state = 20240611;
	for (unsigned int w = 0; w < 3; w++) {
		watchdog("order", 30);
		order_run(workers[w], 10000, 10000);	/* all queued at once */
		order_run(workers[w], 10000, 3 * workers[w]);
		watchdog("failed init", 20);
		failed_init_run(workers[w]);
		watchdog("stop with jobs pending", 20);
		stop_pending_run(workers[w]);
		watchdog("detached jobs and drain", 20);
		detached_run(workers[w], 20);
	}
	watchdog("two waiters", 15);
	two_waiters_run(200);
	watchdog("stress: one submitter", 15);
	stress_run(8, 1, 8000);
	watchdog("stress: four submitters", 15);
	stress_run(3, 4, 2000);
	stress_run(8, 4, 2000);
	alarm(0);
	return check_report("test_workqueue");
}
