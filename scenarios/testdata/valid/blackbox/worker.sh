#!/bin/sh
# A stand-in for a team's worker: the loader only checks it exists and runs.
exec sleep 3600
