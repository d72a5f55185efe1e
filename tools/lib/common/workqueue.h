/* SPDX-License-Identifier: MIT */
/*
 * A fixed pool of worker threads running jobs from two FIFO queues, the
 * urgent one first. Each
 * worker owns a private context (e.g. a compressor) made by init_worker.
 * The submitter waits for jobs in its own order, which keeps output
 * deterministic whatever the number of workers. Detached jobs may submit
 * more jobs and free themselves; kiln_wq_drain waits until none is left.
 */
#ifndef KILN_WORKQUEUE_H
#define KILN_WORKQUEUE_H

#include <pthread.h>
#include <stdbool.h>

struct kiln_job {
	void (*fn)(struct kiln_job *job, void *worker_ctx);
	struct kiln_job *next;
	bool done;
	bool detached;			/* never touched after fn returns */
};

struct kiln_workqueue {
	pthread_mutex_t lock;
	pthread_cond_t more, finished;
	struct kiln_job *head, *tail;
	struct kiln_job *uhead, *utail;	/* urgent: taken first */
	bool stopping;
	unsigned long pending;		/* queued or running */
	unsigned int nr_threads;
	pthread_t *threads;
	void *(*init_worker)(void *arg);
	void (*exit_worker)(void *ctx);
	void *arg;
};

int kiln_wq_start(struct kiln_workqueue *wq, unsigned int nr_threads,
		  void *(*init_worker)(void *arg), void (*exit_worker)(void *),
		  void *arg);
void kiln_wq_submit(struct kiln_workqueue *wq, struct kiln_job *job);
/* Ahead of every job submitted the usual way (e.g. scanning a directory). */
void kiln_wq_submit_urgent(struct kiln_workqueue *wq, struct kiln_job *job);
void kiln_wq_wait(struct kiln_workqueue *wq, struct kiln_job *job);
void kiln_wq_drain(struct kiln_workqueue *wq);
void kiln_wq_stop(struct kiln_workqueue *wq);
unsigned int kiln_online_cpus(void);

#endif
