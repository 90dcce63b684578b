/* SPDX-License-Identifier: MIT */
/* Experiment behind docs/spill.md (the ext4 floor for data that fits): could a second thread populate a fresh
   512 MiB block (MADV_POPULATE_WRITE, 2 MiB at a time from the end) while the program writes it from the start,
   halving the wall time on a 2-core machine? MODE 0: anonymous memory advised MADV_HUGEPAGE (plain numpy);
   1: a fallocated file in /var/tmp mapped shared (spill); 2: the same with the helper thread. 6 rounds each,
   printing each round's wall time: the two threads faulting the same file contend (ext4, the mapping), so the
   helper makes the fill slower (docs/spill.md). Not built: cc -O2 -pthread populate_helper.c; ./a.out MODE */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif
#define SZ ((size_t)512 << 20)
#define CH ((size_t)2 << 20)
static char *base; static _Atomic size_t front, back;
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
static void *helper(void *a){(void)a;
  for(;;){ size_t b=atomic_load(&back); if(b<=atomic_load(&front)+CH) break; b-=CH; atomic_store(&back,b);
    madvise(base+b,CH,MADV_POPULATE_WRITE);} return NULL;}
int main(int argc,char**argv){
  int mode=atoi(argv[1]); /* 0 anon thp, 1 file, 2 file+helper */
  for(int r=0;r<6;r++){
    int fd=-1;
    if(mode){fd=open("/var/tmp",O_TMPFILE|O_RDWR,0600); fallocate(fd,0,0,SZ);
      base=mmap(NULL,SZ,PROT_READ|PROT_WRITE,MAP_SHARED,fd,0);}
    else {base=mmap(NULL,SZ+CH,PROT_READ|PROT_WRITE,MAP_PRIVATE|MAP_ANONYMOUS,-1,0); base=(char*)(((unsigned long)base+CH-1)&~(CH-1)); madvise(base,SZ,MADV_HUGEPAGE);}
    double t0=now(); pthread_t th; front=0; back=SZ;
    if(mode==2) pthread_create(&th,NULL,helper,NULL);
    for(size_t o=0;o<SZ;o+=4096){ if(mode==2 && (o&(CH-1))==0){ atomic_store(&front,o); if(o>=atomic_load(&back)) break;} for(size_t k=0;k<4096;k+=512) *(volatile long*)(base+o+k)=1;}
    if(mode==2) pthread_join(th,NULL);
    double t1=now(); printf("%.3f ",t1-t0); fflush(stdout);
    munmap(base,SZ); if(fd>=0) close(fd);
  }
  printf(" mode %d\n",mode); return 0;}
