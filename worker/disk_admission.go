package worker

import (
	"bufio"
	"cmp"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/rs/zerolog"
	"github.com/warrenhq/warren/messages"
)

// diskFor is the disk limit of task t's home: its own limits.disk_bytes,
// or the worker's. More than the worker's limit never gets here: it is the
// disk ceiling (overCeiling), and admission (admitDisk) counted every slot
// at that limit.
func (w *Worker) diskFor(t *messages.Task) int64 {
	return cmp.Or(t.Limits.DiskBytes, w.cfg.DiskBytes)
}

// admitDisk refuses a configuration whose slots cannot all hold a home at
// its disk limit: homes are tmpfs, so Capacity × DiskBytes must fit the
// host's memory and swap (MemTotal + SwapTotal); above what is available
// now (MemAvailable + SwapFree) it only warns, since running tasks use
// that memory only as they write.
func admitDisk(cfg Config, log zerolog.Logger) error {
	if cfg.DiskBytes <= 0 {
		return nil
	}
	m, err := readMeminfo("/proc/meminfo")
	if err != nil {
		log.Warn().Err(err).Msg("cannot read the host's memory: disk limits not checked against it")
		return nil
	}
	need := int64(cfg.Capacity) * cfg.DiskBytes
	if total := m["MemTotal"] + m["SwapTotal"]; need > total {
		return fmt.Errorf("worker config: Capacity %d × DiskBytes %d = %d bytes of task homes exceed the host's memory and swap (%d bytes; homes are tmpfs): lower --capacity or --disk", cfg.Capacity, cfg.DiskBytes, need, total)
	}
	if avail := m["MemAvailable"] + m["SwapFree"]; need > avail {
		log.Warn().Int64("need", need).Int64("available", avail).Msg("full task homes (--capacity × --disk) would exceed the host's available memory")
	}
	return nil
}

// readMeminfo reads /proc/meminfo's fields, in bytes.
func readMeminfo(path string) (map[string]int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	m := map[string]int64{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		fs := strings.Fields(v)
		if len(fs) == 0 {
			continue
		}
		n, err := strconv.ParseInt(fs[0], 10, 64)
		if err != nil {
			continue
		}
		if len(fs) > 1 && fs[1] == "kB" {
			n <<= 10
		}
		m[k] = n
	}
	return m, sc.Err()
}
