#!/usr/bin/env bash
rm -rf out
