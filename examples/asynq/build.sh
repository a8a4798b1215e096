#!/bin/sh
# Builds the asynq example's worker and its faultline adapters into bin/,
# after go vet. Run from anywhere; needs Go (the module is examples/asynq).
set -eu
cd "$(dirname "$0")"
go vet ./...
mkdir -p bin
for cmd in worker inject observe paystub; do
	go build -o "bin/$cmd" "./$cmd"
done
echo "built bin/worker bin/inject bin/observe bin/paystub"
