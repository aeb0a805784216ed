// zlib from Debian's zlib1g-dev, for gzip-encoding /config responses.
#include <zlib.h>
