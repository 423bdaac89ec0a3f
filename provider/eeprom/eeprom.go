// Package eeprom provides /Component/Eeprom: reading and writing the two
// EEPROM chips of the non-volatile memory, with the address rules of the
// specification.
package eeprom

import (
	"encoding/json"
	"fmt"
	"strconv"

	"senseboard/device"
	"senseboard/nvm"
	"senseboard/profile"
	"senseboard/resource"
)

// Model is the chips' model.
const Model = "M24M01"

// Info is the content of GET /Component/Eeprom/{EepromIndex}/Info.
type Info struct {
	Model string `json:"Model"`
	Size  uint32 `json:"Size"`
}

// Data is EepromData: the bytes read or written.
type Data struct {
	Bytes Bytes `json:"bytes"`
}

// Bytes encodes as a JSON array of numbers, not base64.
type Bytes []byte

// MarshalJSON encodes the bytes as numbers.
func (b Bytes) MarshalJSON() ([]byte, error) { return b.AppendJSON(nil), nil }

// AppendJSON appends the bytes as a JSON array of numbers.
func (b Bytes) AppendJSON(dst []byte) []byte {
	dst = append(dst, '[')
	for i, v := range b {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = strconv.AppendUint(dst, uint64(v), 10)
	}
	return append(dst, ']')
}

// UnmarshalJSON decodes an array of numbers 0..255.
func (b *Bytes) UnmarshalJSON(data []byte) error {
	var ints []int
	if err := json.Unmarshal(data, &ints); err != nil {
		return err
	}
	out := make(Bytes, len(ints))
	for i, n := range ints {
		if n < 0 || n > 255 {
			return fmt.Errorf("byte %d is %d; bytes are 0..255", i, n)
		}
		out[i] = byte(n)
	}
	*b = out
	return nil
}

// Provider serves the EEPROM resources.
type Provider struct {
	mem *nvm.EEPROM
}

// New returns the provider of mem.
func New(mem *nvm.EEPROM) *Provider { return &Provider{mem: mem} }

// Register installs the EEPROM resources.
func (p *Provider) Register(d *device.Core) error {
	d.HandleFunc("/Component/Eeprom/{EepromIndex}/Info", resource.Get, func(req *resource.Request) resource.Response {
		if i := req.Arg(0).Int(); i < 0 || i >= profile.Chips {
			return resource.Errorf(resource.StatusNotFound, "no EEPROM chip %d; chips are 0 and 1", i)
		}
		return resource.OK(&Info{Model: Model, Size: profile.ChipSize})
	})
	d.HandleFunc("/Component/Eeprom/{EepromIndex}", resource.Get, p.get)
	d.HandleFunc("/Component/Eeprom/{EepromIndex}", resource.Put, p.put)
	return nil
}

func chip(req *resource.Request) (int, *resource.Response) {
	i := req.Arg(0).Int()
	if i < 0 || i >= profile.Chips {
		r := resource.Errorf(resource.StatusNotImplemented, "no EEPROM chip %d; chips are 0 and 1", i)
		return 0, &r
	}
	return int(i), nil
}

func (p *Provider) get(req *resource.Request) resource.Response {
	c, errResp := chip(req)
	if errResp != nil {
		return *errResp
	}
	addr, n := req.Arg(1).Uint(), req.Arg(2).Uint()
	if addr+n > profile.ChipSize {
		return resource.Errorf(resource.StatusBadRequest, "address %d with length %d reaches past the end of chip %d (%d bytes, addresses 0..%d)",
			addr, n, c, profile.ChipSize, profile.ChipSize-1)
	}
	b, err := p.mem.Read(c, int(addr), int(n))
	if err != nil {
		return resource.Errorf(resource.StatusBadRequest, "%v", err)
	}
	return resource.OK(&Data{Bytes: b})
}

func (p *Provider) put(req *resource.Request) resource.Response {
	c, errResp := chip(req)
	if errResp != nil {
		return *errResp
	}
	addr := req.Arg(1).Uint()
	var data Data
	if err := req.Arg(2).Decode(&data); err != nil {
		return resource.Errorf(resource.StatusBadRequest, "EepromData: %v", err)
	}
	end := addr + uint64(len(data.Bytes))
	switch {
	case addr >= profile.ChipSize:
		return resource.Errorf(resource.StatusBadRequest, "address %d is past the end of chip %d (addresses 0..%d)", addr, c, profile.ChipSize-1)
	case end > profile.ChipSize && c == 0:
		first := profile.ChipSize - addr
		return resource.Errorf(resource.StatusBadRequest,
			"the block of %d bytes at %d crosses the end of chip 0; split it: %d bytes to chip 0 at %d, and %d bytes to chip 1 at 0",
			len(data.Bytes), addr, first, addr, uint64(len(data.Bytes))-first)
	case end > profile.ChipSize:
		return resource.Errorf(resource.StatusBadRequest, "the block of %d bytes at %d reaches past the end of chip %d (%d bytes)",
			len(data.Bytes), addr, c, profile.ChipSize)
	}
	if err := p.mem.Write(c, int(addr), data.Bytes); err != nil {
		return resource.Errorf(resource.StatusInternalServerError, "the write did not reach non-volatile memory: %v", err)
	}
	return resource.OK(nil)
}
