// ZeroMQ from Debian's libzmq3-dev (built with libsodium, so CURVE is available).
#include <zmq.h>
