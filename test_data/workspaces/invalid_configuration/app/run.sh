#!/usr/bin/env bash
echo run
