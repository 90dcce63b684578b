/* have.h: which parts are in src/ (tests/reliability/CMakeLists.txt defines MS_HAVE_* from the sources). */
#ifndef MS_REL_HAVE_H
#define MS_REL_HAVE_H
#ifndef MS_HAVE_HEAP
#define MS_HAVE_HEAP 0
#endif
#ifndef MS_HAVE_SPACE
#define MS_HAVE_SPACE 0
#endif
#ifndef MS_HAVE_FRAME
#define MS_HAVE_FRAME 0
#endif
#ifndef MS_HAVE_DMA
#define MS_HAVE_DMA 0
#endif
#endif
