package redisstore_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/faultline/faultline/reference/disposition"
	"github.com/faultline/faultline/reference/dlq"
	"github.com/faultline/faultline/reference/store"
	"github.com/faultline/faultline/reference/store/redisstore"
)

// The subprocess the interruption specs kill: when the test binary runs with
// helperEnv set, TestMain runs helperMain instead of the specs.
const (
	helperEnv   = "FAULTLINE_REDISSTORE_HELPER"
	helperAddr  = "FAULTLINE_REDISSTORE_HELPER_ADDR"
	helperNS    = "FAULTLINE_REDISSTORE_HELPER_NS"
	helperNow   = "FAULTLINE_REDISSTORE_HELPER_NOW"   // Unix milliseconds
	helperPause = "FAULTLINE_REDISSTORE_HELPER_PAUSE" // requeues after which it stops and waits to be killed; 0: never
)

// helperMain requeues every Failed entry of a namespace, as an operator's
// process would, until it is done or killed. It reports "started" on stdout
// once its store is built; with a pause, it reports "paused" after that many
// requeues and blocks, between two steps of the run, until it is killed.
func helperMain() int {
	nowMs, err := strconv.ParseInt(os.Getenv(helperNow), 10, 64)
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		return 2
	}
	pause, _ := strconv.Atoi(os.Getenv(helperPause))
	c := redisstore.NewClient(os.Getenv(helperAddr))
	defer c.Close()
	requeues := 0
	s, err := redisstore.New(c, store.Config{Namespace: os.Getenv(helperNS), BatchSize: 20, Observer: func(e disposition.Event) {
		if requeues++; requeues == pause {
			fmt.Println("paused")
			select {} // the parent kills us here
		}
	}})
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		return 2
	}
	fmt.Println("started")
	_, err = s.RequeueMatching(context.Background(), dlq.Filter{},
		dlq.RequeueOptions{Budget: dlq.OneMoreAttempt, By: "helper"}, time.UnixMilli(nowMs), false)
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		return 1
	}
	return 0
}
