// Seconds to touch freshly allocated memory for the first time, and again, with transparent huge
// pages or 4 KiB pages, by 1-16 threads: what the build pays for its synapse store's pages before
// it writes a synapse (docs/performance.md, "The build's first touch"). On a VM that hands freed
// memory back to its host, pause a few seconds between runs to see the cold case.
//
//   gcc -O2 -pthread bench/first_touch.c -o /tmp/first_touch
//   /tmp/first_touch MIB THREADS HUGE MODE   # HUGE 1: MADV_HUGEPAGE, 0: MADV_NOHUGEPAGE;
//                                            # MODE 0: memset, 2: MADV_POPULATE_WRITE
//   for i in 1 2 3; do sleep 6; /tmp/first_touch 1200 2 1 0; sleep 6; /tmp/first_touch 1200 2 0 0; done
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

static size_t bytes;
static char* base;
static int threads, mode;

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void* touch(void* arg) {
  const size_t part = bytes / (size_t)threads;
  char* p = base + (size_t)(long)arg * part;
  if (mode == 2) madvise(p, part, MADV_POPULATE_WRITE);
  else memset(p, 1, part);
  return NULL;
}

int main(int argc, char** argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: %s MIB THREADS HUGE(0|1) MODE(0 memset|2 populate)\n", argv[0]);
    return 2;
  }
  bytes = (size_t)(atof(argv[1]) * 1048576.0) / (2u << 20) * (2u << 20);
  threads = atoi(argv[2]);
  const int huge = atoi(argv[3]);
  mode = atoi(argv[4]);
  if (threads < 1 || threads > 16 || bytes == 0) {
    fprintf(stderr, "MIB must be at least 2 and THREADS 1-16\n");
    return 2;
  }
  base = aligned_alloc(2u << 20, bytes);
  if (!base) return 1;
  madvise(base, bytes, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
  pthread_t th[16];
  const double t0 = now();
  for (long i = 0; i < threads; ++i) pthread_create(&th[i], NULL, touch, (void*)i);
  for (int i = 0; i < threads; ++i) pthread_join(th[i], NULL);
  const double t1 = now();
  memset(base, 2, bytes);
  const double t2 = now();
  printf("MiB %.0f threads %d huge %d mode %d: first touch %.3f s, second %.3f s\n", (double)bytes / 1048576.0,
         threads, huge, mode, t1 - t0, t2 - t1);
  free(base);
  return 0;
}
