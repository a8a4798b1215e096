package dlqplugin_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestDLQPlugin(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "DLQ Plug-in Example Suite")
}
