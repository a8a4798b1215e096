package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/faultline/faultline/reference/dlq"
)

// record writes one operator action into the audit stream beside the DLQ
// (dlq.Auditor: the stream the web UI writes too; `faultline dlq audit`
// reads it). A bulk move writes a
// "started" record before its first batch and refuses to start when it
// cannot; any other failure to audit is said on stderr, never silent, and
// does not undo a move already made.
// auditTimeout bounds an audit write that outlives the command's context.
const auditTimeout = 5 * time.Second

func (d *dlqConn) record(c *cobra.Command, r dlq.AuditRecord) error {
	if r.At.IsZero() {
		r.At = time.Now()
	}
	r.Via = "cli"
	r.IDs = r.IDs[:min(len(r.IDs), dlq.MaxAuditIDs)]
	a, ok := any(d.store).(dlq.Auditor)
	if !ok {
		return fmt.Errorf("audit %s: this store keeps no audit stream", r.Action)
	}
	// A move already made is recorded even when the operator pressed
	// Ctrl-C: the record outlives the command's context, for a while.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(c.Context()), auditTimeout)
	defer cancel()
	id, err := a.Audit(ctx, r)
	if err != nil {
		err = fmt.Errorf("audit %s: %w", r.Action, err)
		printErr(c.ErrOrStderr(), fmt.Errorf("warning: %w", err))
		return err
	}
	_ = id
	return nil
}
