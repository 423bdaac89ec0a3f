// Package afe provides /Component/MAX3000x: low-level access to the ECG
// analog front end, a MAX30003.
//
// The register file follows the MAX30003 register map. Registers are 24 bits.
//
//	0x00 NO_OP        read/write, reads 0
//	0x01 STATUS       read-only; LONINT (bit 11) is set while the electrodes touch the skin
//	0x02 EN_INT       read/write
//	0x03 EN_INT2      read/write
//	0x04 MNGR_INT     read/write
//	0x05 MNGR_DYN     read/write
//	0x08 SW_RST       write-only; writing 0 restores every register's power-on value
//	0x09 SYNCH        write-only
//	0x0A FIFO_RST     write-only
//	0x0F INFO         read-only; revision and part id
//	0x10 CNFG_GEN     read/write
//	0x12 CNFG_CAL     read/write
//	0x14 CNFG_EMUX    read/write
//	0x15 CNFG_ECG     read/write; reads show the ECG rate and filters in use
//	0x1D CNFG_RTOR1   read/write
//	0x1E CNFG_RTOR2   read/write
//	0x20 ECG_FIFO_BURST read-only, reads 0
//	0x21 ECG_FIFO     read-only, reads 0
//	0x25 RTOR         read-only; the latest R-to-R interval in 7.8 ms units (bits 23..10)
//	0x7F NO_OP        read/write, reads 0
//
// Reading an address that is not listed, or a write-only register, is
// refused with 400, as is writing a read-only one. Writes are kept in the
// register file; the measurement resources (/Meas/ECG, /Meas/HR) stay in
// charge of the measurement.
package afe

import (
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"senseboard/clock"
	"senseboard/device"
	"senseboard/resource"
)

// Part and Revision are what /Component/MAX3000x/Version reports.
const (
	Part     = "MAX30003"
	Revision = "5"
)

type access uint8

const (
	readWrite access = iota
	readOnly
	writeOnly
)

type register struct {
	name    string
	access  access
	initial uint32
}

var registers = map[uint8]register{
	0x00: {"NO_OP", readWrite, 0},
	0x01: {"STATUS", readOnly, 0},
	0x02: {"EN_INT", readWrite, 0x000003},
	0x03: {"EN_INT2", readWrite, 0x000003},
	0x04: {"MNGR_INT", readWrite, 0x780004},
	0x05: {"MNGR_DYN", readWrite, 0x3F0000},
	0x08: {"SW_RST", writeOnly, 0},
	0x09: {"SYNCH", writeOnly, 0},
	0x0A: {"FIFO_RST", writeOnly, 0},
	0x0F: {"INFO", readOnly, 0x500000 | 0x050000},
	0x10: {"CNFG_GEN", readWrite, 0x080004},
	0x12: {"CNFG_CAL", readWrite, 0x720000},
	0x14: {"CNFG_EMUX", readWrite, 0x0B0000},
	0x15: {"CNFG_ECG", readWrite, 0x805000},
	0x1D: {"CNFG_RTOR1", readWrite, 0x3FC600},
	0x1E: {"CNFG_RTOR2", readWrite, 0x202400},
	0x20: {"ECG_FIFO_BURST", readOnly, 0},
	0x21: {"ECG_FIFO", readOnly, 0},
	0x25: {"RTOR", readOnly, 0},
	0x7F: {"NO_OP", readWrite, 0},
}

// Register addresses the provider updates from the measurement.
const (
	RegStatus  = 0x01
	RegCnfgECG = 0x15
	RegRTOR    = 0x25
)

// StatusLeadsOn is the STATUS bit set while the electrodes touch the skin.
const StatusLeadsOn = 1 << 11

// Version is the content of GET /Component/MAX3000x/Version.
type Version struct {
	VersionInfo []VersionInfo `json:"versionInfo"`
}

// VersionInfo names a version.
type VersionInfo struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// Wake-up sources of /Component/MAX3000x/WakeUp.
const (
	WakeOnMovement uint8 = 0
	WakeOnContact  uint8 = 1
)

// Config connects the front end to the parts of the device it reads.
type Config struct {
	// Electrodes say whether the electrodes touch the skin; nil means always.
	Electrodes Electrodes
	// ECG is the ECG measurement, whose configuration CNFG_ECG shows; nil
	// keeps the register.
	ECG ECG
	// HR is the heart rate, whose latest R-to-R interval RTOR shows; nil
	// keeps the register.
	HR HeartRate
}

// Electrodes say whether the electrodes touch the skin (the ECG signal's
// source: the sensor model or a recording).
type Electrodes interface {
	Contact(at time.Duration) bool
}

// ECG is the ECG measurement (meas.ECG).
type ECG interface {
	// ECGRegister returns the CNFG_ECG bits of the measurement in use.
	ECGRegister() uint32
}

// HeartRate is the heart rate (meas.HR).
type HeartRate interface {
	// LastRR returns the latest R-to-R interval, 0 before the first.
	LastRR() time.Duration
}

// Provider serves the front-end resources.
type Provider struct {
	cfg Config
	clk clock.Clock // the device's, from Register

	mu     sync.Mutex
	regs   map[uint8]uint32
	wakeUp uint8
}

// New returns the provider with power-on register values.
func New(cfg Config) *Provider {
	p := &Provider{cfg: cfg}
	p.Reset()
	return p
}

// Reset restores the power-on register values and the default wake-up
// (electrode contact).
func (p *Provider) Reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.regs = map[uint8]uint32{}
	for a, r := range registers {
		p.regs[a] = r.initial
	}
	p.wakeUp = WakeOnContact
}

// WakeUp returns the wake-up source used when the device turns off.
func (p *Provider) WakeUp() uint8 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.wakeUp
}

// Register installs the resources.
func (p *Provider) Register(d *device.Core) error {
	p.clk = d.Clock()
	d.HandleFunc("/Component/MAX3000x/WakeUp", resource.Get, func(*resource.Request) resource.Response {
		return resource.OK(p.WakeUp())
	})
	d.HandleFunc("/Component/MAX3000x/WakeUp", resource.Put, func(req *resource.Request) resource.Response {
		v := uint8(req.Arg(0).Uint())
		p.mu.Lock()
		p.wakeUp = v
		p.mu.Unlock()
		return resource.OK(strconv.Itoa(int(v)))
	})
	d.HandleFunc("/Component/MAX3000x/Version", resource.Get, func(*resource.Request) resource.Response {
		return resource.OK(&Version{VersionInfo: []VersionInfo{{"Part", Part}, {"Revision", Revision}}})
	})
	d.HandleFunc("/Component/MAX3000x/Register", resource.Get, func(req *resource.Request) resource.Response {
		v, err := p.Read(uint8(req.Arg(0).Uint()))
		if err != "" {
			return resource.Errorf(resource.StatusBadRequest, "%s", err)
		}
		return resource.OK(v)
	})
	d.HandleFunc("/Component/MAX3000x/Register", resource.Put, func(req *resource.Request) resource.Response {
		if err := p.Write(uint8(req.Arg(0).Uint()), uint32(req.Arg(1).Uint())); err != "" {
			return resource.Errorf(resource.StatusBadRequest, "%s", err)
		}
		return resource.OK(nil)
	})
	return nil
}

func known() string {
	var addrs []int
	for a := range registers {
		addrs = append(addrs, int(a))
	}
	sort.Ints(addrs)
	var parts []string
	for _, a := range addrs {
		parts = append(parts, "0x"+strings.ToUpper(strconv.FormatInt(int64(a), 16)))
	}
	return strings.Join(parts, ", ")
}

// Read returns a register's value, or a message saying why it cannot be read.
func (p *Provider) Read(addr uint8) (uint32, string) {
	r, ok := registers[addr]
	switch {
	case !ok:
		return 0, "the MAX30003 has no register 0x" + strconv.FormatInt(int64(addr), 16) + "; registers: " + known()
	case r.access == writeOnly:
		return 0, r.name + " is write-only"
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	switch addr {
	case RegStatus:
		if p.cfg.Electrodes == nil || p.cfg.Electrodes.Contact(p.clk.Now()) {
			return p.regs[addr] | StatusLeadsOn, ""
		}
		return p.regs[addr] &^ StatusLeadsOn, ""
	case RegCnfgECG:
		if p.cfg.ECG != nil {
			return p.cfg.ECG.ECGRegister(), ""
		}
	case RegRTOR:
		if p.cfg.HR != nil {
			if rr := p.cfg.HR.LastRR(); rr > 0 {
				units := uint32(rr / (7812500 * time.Nanosecond)) // 1/128 s
				return (units & 0x3FFF) << 10, ""
			}
		}
	}
	return p.regs[addr], ""
}

// Write sets a register, or returns a message saying why it cannot.
func (p *Provider) Write(addr uint8, v uint32) string {
	r, ok := registers[addr]
	switch {
	case !ok:
		return "the MAX30003 has no register 0x" + strconv.FormatInt(int64(addr), 16) + "; registers: " + known()
	case r.access == readOnly:
		return r.name + " is read-only"
	case v > 0xFFFFFF:
		return "registers are 24 bits; " + strconv.FormatUint(uint64(v), 10) + " is larger"
	}
	if addr == 0x08 {
		p.Reset()
		return ""
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if r.access == readWrite && addr != 0x00 && addr != 0x7F {
		p.regs[addr] = v
	}
	return ""
}
