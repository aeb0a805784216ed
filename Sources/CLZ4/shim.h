// LZ4 frame format from Debian's liblz4-dev.
#include <lz4frame.h>
