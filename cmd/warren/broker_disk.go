//go:build !client

package main

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/warrenhq/warren/broker/embedded"
)

// rerecord records srv in the data dir again after it restarted itself
// (its store failed on a full disk and space came back): clients check
// the server ID the record names.
func rerecord(g *globals, srv *embedded.Server) {
	if _, err := writeBrokerRecord(g.DataDir, srv); err != nil {
		g.Log.Error().Err(err).Msg("the broker restarted but its new address could not be recorded: clients without --nats will not find it")
	}
}

// metrics are the collectors of `warren up`'s broker, for the host's
// metrics server.
func (l *upLink) metrics() []prometheus.Collector { return brokerCollectors(l.srv) }

// brokerCollectors report the embedded broker's data dir and store
// (warren_broker_*), as its store guard last saw them.
func brokerCollectors(srv *embedded.Server) []prometheus.Collector {
	gauge := func(name, help string, f func(embedded.DiskStatus) float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "warren_broker", Name: name, Help: help},
			func() float64 { return f(srv.Disk()) })
	}
	flag := func(b bool) float64 {
		if b {
			return 1
		}
		return 0
	}
	return []prometheus.Collector{
		gauge("disk_free_bytes", "Free space of the filesystem of the broker's data dir.", func(d embedded.DiskStatus) float64 { return float64(d.Free) }),
		gauge("disk_size_bytes", "Size of the filesystem of the broker's data dir.", func(d embedded.DiskStatus) float64 { return float64(d.Size) }),
		gauge("disk_low_below_bytes", "Free space below which the broker warns that its data dir is almost full.", func(d embedded.DiskStatus) float64 { return float64(d.LowBelow) }),
		gauge("disk_low", "1 while the data dir's free space is below warren_broker_disk_low_below_bytes (the broker logs a warning meanwhile).", func(d embedded.DiskStatus) float64 { return flag(d.Low) }),
		gauge("store_failed", "1 while JetStream cannot write its store (the disk filled): nothing is stored until free space is back above the warning level, when the broker restarts by itself.", func(d embedded.DiskStatus) float64 { return flag(d.StoreFailed) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: "warren_broker", Name: "store_restarts_total", Help: "Restarts of the broker after its store failed and space came back."},
			func() float64 { return float64(srv.Disk().Restarts) }),
	}
}
