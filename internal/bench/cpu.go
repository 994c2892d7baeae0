package bench

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"syscall"
	"time"
)

// Processes' CPU time, from /proc/PID/stat, so that a benchmark can print
// what each operation cost the servers it drove, not only how fast they
// answered: on a machine of two cores a deployment of several processes
// and a single server are bounded by their CPU per operation.

// clockTicks is the kernel's USER_HZ, the unit of the times in
// /proc/PID/stat: 100 on every Linux architecture Go runs on.
const clockTicks = 100

// procCPU is the user and system time the processes have used so far.
func procCPU(pids []int) (time.Duration, error) {
	var total time.Duration
	for _, pid := range pids {
		st, err := ReadProcStat(pid)
		if err != nil {
			return 0, fmt.Errorf("bench: CPU time of process %d: %w", pid, err)
		}
		total += st.CPU
	}
	return total, nil
}

// ProcStat is what a benchmark (or a test of one) reads of a process from
// /proc/PID/stat.
type ProcStat struct {
	State string        // R, S, D, Z...: Z has exited and waits to be reaped
	PPID  int           // its parent
	CPU   time.Duration // user and system time used so far
	Sys   time.Duration // the system (kernel) part of CPU
}

// ReadProcStat reads /proc/PID/stat.
func ReadProcStat(pid int) (ProcStat, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ProcStat{}, err
	}
	return parseProcStat(raw)
}

// parseProcStat reads the state, the parent and utime and stime (fields 3,
// 4, 14 and 15) of one /proc/PID/stat line. The command name (field 2) is
// in parentheses and may hold spaces and parentheses itself, so fields are
// counted from the last ')'.
func parseProcStat(raw []byte) (ProcStat, error) {
	end := bytes.LastIndexByte(raw, ')')
	if end < 0 {
		return ProcStat{}, fmt.Errorf("malformed stat line")
	}
	fields := bytes.Fields(raw[end+1:])
	// fields[0] is field 3 (state); utime is field 14, stime field 15.
	if len(fields) < 13 {
		return ProcStat{}, fmt.Errorf("stat line has %d fields after the name, want at least 13", len(fields))
	}
	ppid, err := strconv.Atoi(string(fields[1]))
	if err != nil {
		return ProcStat{}, fmt.Errorf("malformed parent %q", fields[1])
	}
	var ticks [2]int64 // user, system
	for i, f := range fields[11:13] {
		n, err := strconv.ParseInt(string(f), 10, 64)
		if err != nil || n < 0 {
			return ProcStat{}, fmt.Errorf("malformed CPU time %q", f)
		}
		ticks[i] = n
	}
	tick := func(n int64) time.Duration { return time.Duration(n) * time.Second / clockTicks }
	return ProcStat{State: string(fields[0]), PPID: ppid, CPU: tick(ticks[0] + ticks[1]), Sys: tick(ticks[1])}, nil
}

// selfCPU is the user and system time this process has used so far.
func selfCPU() time.Duration {
	cpu, _ := selfCPUSplit()
	return cpu
}

// selfCPUSplit is selfCPU and the system (kernel) part of it.
func selfCPUSplit() (cpu, sys time.Duration) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), time.Duration(ru.Stime.Nano())
}

// cpuMeter measures the CPU the watched servers and this process spend
// during one phase.
type cpuMeter struct {
	pids         []int
	server, self time.Duration
	err          error
}

// startCPU samples the CPU times at the start of a phase; with no pids it
// measures nothing.
func startCPU(pids []int) *cpuMeter {
	m := &cpuMeter{pids: pids}
	if len(pids) > 0 {
		m.server, m.err = procCPU(pids)
		m.self = selfCPU()
	}
	return m
}

// stop records, in p, the CPU per operation done since start.
func (m *cpuMeter) stop(p *NNTPPhase) {
	if len(m.pids) == 0 || p.Done == 0 {
		return
	}
	server, err := procCPU(m.pids)
	if err == nil {
		err = m.err
	}
	if err != nil {
		if p.FirstError == "" {
			p.FirstError = err.Error()
		}
		return
	}
	perOp := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(p.Done) }
	p.ServerCPUUs = perOp(server - m.server)
	p.ClientCPUUs = perOp(selfCPU() - m.self)
}
