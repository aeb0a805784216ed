/// The release this build is: `callveil --version`, and the version of the Debian package `make dist` builds.
let callveilVersion = "0.1.0"
