package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/faultline/faultline/cmd/faultline/internal/demo"
	"github.com/faultline/faultline/reference/store"
	"github.com/faultline/faultline/reference/store/memstore"
)

// backends are the stores the demo can run on, by flag value.
var backends = map[string]func(cfg store.Config) (demo.Backend, error){
	"memory": func(cfg store.Config) (demo.Backend, error) { return memstore.New(cfg) },
}

func backendNames() string {
	names := make([]string, 0, len(backends))
	for n := range backends {
		names = append(names, n)
	}
	return strings.Join(sortedStrings(names), ", ")
}

func newDemoCommand() *cobra.Command {
	var (
		seed    uint64
		backend string
	)
	c := &cobra.Command{
		Use:   "demo",
		Short: "Play the seed's payment-service challenge through the reference implementation and show what happened to every job",
		Long: `demo runs the payment-service challenge on virtual time: a declined card, gateway
timeouts with and without an idempotency key, an authentication failure that pages,
an SMTP relay that fails until the DLQ, a primary that fails and recovers (jobs
diverted to the batch queue and drained back) and an operator reprocessing the
medium-severity DLQ entries. The same seed prints the same report, byte for byte.`,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usage(c, fmt.Errorf("demo takes no arguments, got %q", args[0]))
			}
			return nil
		},
		RunE: func(c *cobra.Command, _ []string) error {
			open, ok := backends[backend]
			if !ok {
				return usage(c, fmt.Errorf("unknown --backend %q (allowed: %s)", backend, backendNames()))
			}
			return demo.Run(c.Context(), c.OutOrStdout(), demo.Options{Seed: seed, Name: backend, NewBackend: open})
		},
	}
	c.Flags().Uint64Var(&seed, "seed", 1, "seed for every random stream")
	c.Flags().StringVar(&backend, "backend", defaultBackend, "store to run on: "+backendNames())
	return c
}
