/* SPDX-License-Identifier: MIT */
/* Experiment behind docs/spill.md (Population ahead of a fill): a second thread populates a fresh 512 MiB block
   (MADV_POPULATE_WRITE, 2 MiB at a time) while the main thread writes it from the start. MODE 0: anonymous
   memory advised MADV_HUGEPAGE (plain numpy); 1: a fallocated file in /var/tmp mapped shared (spill) with spill's
   advice for data that fits (MADV_HUGEPAGE + MADV_RANDOM: one 2 MiB folio a fault); 2: the same with the helper
   thread, from the block's end (DIR 0, stopping at the first granule in the page cache, mincore) or from its start
   (DIR 1, skipping granules already there). With NOADV set in the environment the file mapping keeps the default
   advice, and the two threads contend on the file's smaller folios: the helper then makes the fill slower. 5
   rounds each, printing each round's wall and CPU time and the granules the helper populated. Run with both CPUs
   to itself (chrt -f 10 ./a.out MODE) to see what a machine with a free CPU gives.
   Not built: cc -O2 -pthread populate_helper.c; ./a.out MODE [DIR] */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif
#define SZ ((size_t)512 << 20)
#define CH ((size_t)2 << 20)
static char *base; static int dir; /* 0 from end, 1 from start */
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
static double cpu(void){struct rusage r;getrusage(RUSAGE_SELF,&r);return r.ru_utime.tv_sec+r.ru_stime.tv_sec+(r.ru_utime.tv_usec+r.ru_stime.tv_usec)*1e-6;}
static _Atomic int done_units;
static void *helper(void *a){(void)a; unsigned char v; int n=0;
  for(size_t i=0;i<SZ/CH;i++){ size_t u = dir? i : SZ/CH-1-i; char *p=base+u*CH;
    if(mincore(p,4096,&v)==0 && (v&1)) { if(!dir) break; else continue; }
    madvise(p,CH,MADV_POPULATE_WRITE); n++; }
  done_units=n; return NULL;}
int main(int argc,char**argv){
  int mode=atoi(argv[1]); dir = argc>2 ? atoi(argv[2]) : 0; /* 0 anon thp, 1 file, 2 file+helper */
  for(int r=0;r<5;r++){
    int fd=-1; void *res=NULL;
    if(mode){fd=open("/var/tmp",O_TMPFILE|O_RDWR,0600); ftruncate(fd,SZ); 
      res=mmap(NULL,SZ+CH,PROT_NONE,MAP_PRIVATE|MAP_ANONYMOUS|MAP_NORESERVE,-1,0); base=(char*)(((unsigned long)res+CH-1)&~(CH-1));
      base=mmap(base,SZ,PROT_READ|PROT_WRITE,MAP_SHARED|MAP_FIXED,fd,0); if(!getenv("NOADV")){madvise(base,SZ,MADV_HUGEPAGE); madvise(base,SZ,MADV_RANDOM);} }
    else {res=mmap(NULL,SZ+CH,PROT_READ|PROT_WRITE,MAP_PRIVATE|MAP_ANONYMOUS,-1,0); base=(char*)(((unsigned long)res+CH-1)&~(CH-1)); madvise(base,SZ,MADV_HUGEPAGE);}
    double c0=cpu(), t0=now(); pthread_t th;
    if(mode) fallocate(fd,0,0,SZ);
    if(mode==2) pthread_create(&th,NULL,helper,NULL);
    for(size_t o=0;o<SZ;o+=64) *(volatile long*)(base+o)=1;
    double t1=now();
    if(mode==2) pthread_join(th,NULL);
    double c1=cpu();
    printf("wall %.3f cpu %.3f units %d\n",t1-t0,c1-c0,mode==2?done_units:0); fflush(stdout);
    munmap(res,SZ+CH); if(fd>=0) close(fd);
  }
  return 0;}
