#!/bin/sh
# Once the server is up, we poll it.
# once in a while this takes long
echo "no directives here"
