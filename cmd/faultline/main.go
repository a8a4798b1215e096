// Command faultline is the chaos-testing harness's command line: it runs
// scenarios on the simulator, writes and compares their reports, checks
// scenario and classifier rule files, and plays the demo.
package main

import (
	"context"
	"os"
	"os/signal"

	"github.com/faultline/faultline/cmd/faultline/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := cli.Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
