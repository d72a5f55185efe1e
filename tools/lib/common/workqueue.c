/* SPDX-License-Identifier: MIT */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "kiln.h"
#include "util.h"
#include "workqueue.h"

unsigned int kiln_online_cpus(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	return n > 0 ? (unsigned int)n : 1;
}

static void *worker(void *p)
{
	struct kiln_workqueue *wq = p;
	void *ctx = wq->init_worker ? wq->init_worker(wq->arg) : NULL;

	/* a job given a NULL ctx reports the failure itself */
	pthread_mutex_lock(&wq->lock);
	for (;;) {
		struct kiln_job *job;
		bool detached;

		while (!wq->head && !wq->uhead && !wq->stopping)
			pthread_cond_wait(&wq->more, &wq->lock);
		if (wq->uhead) {
			job = wq->uhead;
			wq->uhead = job->next;
			if (!wq->uhead)
				wq->utail = NULL;
		} else if (wq->head) {
			job = wq->head;
			wq->head = job->next;
			if (!wq->head)
				wq->tail = NULL;
		} else {
			break;
		}
		detached = job->detached;
		pthread_mutex_unlock(&wq->lock);
		job->fn(job, ctx);
		pthread_mutex_lock(&wq->lock);
		if (!detached)
			job->done = true;
		/* waking the waiters for every detached job costs a futex each */
		if (!--wq->pending || !detached)
			pthread_cond_broadcast(&wq->finished);
	}
	pthread_mutex_unlock(&wq->lock);
	if (ctx && wq->exit_worker)
		wq->exit_worker(ctx);
	return NULL;
}

int kiln_wq_start(struct kiln_workqueue *wq, unsigned int nr_threads,
		  void *(*init_worker)(void *arg), void (*exit_worker)(void *),
		  void *arg)
{
	memset(wq, 0, sizeof(*wq));
	pthread_mutex_init(&wq->lock, NULL);
	pthread_cond_init(&wq->more, NULL);
	pthread_cond_init(&wq->finished, NULL);
	wq->init_worker = init_worker;
	wq->exit_worker = exit_worker;
	wq->arg = arg;
	wq->threads = xcalloc(nr_threads, sizeof(*wq->threads));
	for (; wq->nr_threads < nr_threads; wq->nr_threads++)
		if (pthread_create(&wq->threads[wq->nr_threads], NULL, worker, wq)) {
			kiln_err("cannot start worker threads");
			kiln_wq_stop(wq);
			return -1;
		}
	return 0;
}

static void submit(struct kiln_workqueue *wq, struct kiln_job *job,
		   struct kiln_job **head, struct kiln_job **tail)
{
	job->done = false;
	job->next = NULL;
	pthread_mutex_lock(&wq->lock);
	if (*tail)
		(*tail)->next = job;
	else
		*head = job;
	*tail = job;
	wq->pending++;
	pthread_cond_signal(&wq->more);
	pthread_mutex_unlock(&wq->lock);
}

void kiln_wq_submit(struct kiln_workqueue *wq, struct kiln_job *job)
{
	submit(wq, job, &wq->head, &wq->tail);
}

void kiln_wq_submit_urgent(struct kiln_workqueue *wq, struct kiln_job *job)
{
	submit(wq, job, &wq->uhead, &wq->utail);
}

void kiln_wq_wait(struct kiln_workqueue *wq, struct kiln_job *job)
{
	pthread_mutex_lock(&wq->lock);
	while (!job->done)
		pthread_cond_wait(&wq->finished, &wq->lock);
	pthread_mutex_unlock(&wq->lock);
}

void kiln_wq_drain(struct kiln_workqueue *wq)
{
	pthread_mutex_lock(&wq->lock);
	while (wq->pending)
		pthread_cond_wait(&wq->finished, &wq->lock);
	pthread_mutex_unlock(&wq->lock);
}

void kiln_wq_stop(struct kiln_workqueue *wq)
{
	pthread_mutex_lock(&wq->lock);
	wq->stopping = true;
	pthread_cond_broadcast(&wq->more);
	pthread_mutex_unlock(&wq->lock);
	for (unsigned int i = 0; i < wq->nr_threads; i++)
		pthread_join(wq->threads[i], NULL);
	free(wq->threads);
	pthread_mutex_destroy(&wq->lock);
	pthread_cond_destroy(&wq->more);
	pthread_cond_destroy(&wq->finished);
}
