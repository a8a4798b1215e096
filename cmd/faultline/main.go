// Command faultline is the chaos-testing harness's command line: it checks
// classifier rule files today, and runs scenarios, drills and DLQ tools as
// they land.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"

	"github.com/faultline/faultline/cmd/faultline/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := cli.New(os.Stdout, os.Stderr).ExecuteContext(ctx)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "faultline:", err)
	}
	os.Exit(cli.ExitCode(err))
}
