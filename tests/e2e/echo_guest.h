// The guest of the e2e tests' real libvirtd (DayTwoVerbsTest): a 512-byte boot sector that
// SeaBIOS boots from the VM's disk in about a second under TCG, enough to show, through
// `banlieue vm console`, that typed bytes reached a real guest and came back from it. It
//   - echoes what arrives on COM1 upper-cased (the upper case is the guest's doing: nothing on
//     the way could have echoed it), and answers each end of line with " #<n>\r\n",
//     n the lines it has read since it booted, modulo 10: a counter in the guest's CPU state,
//     so a revert to a snapshot taken with the memory shows as the counter going back;
//   - powers off on the ACPI power button (what libvirt's graceful shutdown presses): it
//     enables the button in the PM1a block SeaBIOS set up (PIIX4's PMBASE at 00:01.3, or
//     ICH9's at 00:1f.0) and, seeing it pressed, writes S5 to PM1a_CNT. Without this a stop
//     or a restart would wait out the plugin's 120 s shutdown timeout;
//   - sleeps in `hlt` between timer ticks (idle under TCG), with its own IRQ0 handler, so that no
//     BIOS code (SeaBIOS's serial console polls COM1 for keys) runs to take the input.
//
// Assembled with GNU as (`as --32`, then `ld -m elf_i386 -Ttext=0x7c00 --oformat binary`):
//
//         .code16
// _start: cli
//         xor     %ax, %ax
//         mov     %ax, %ds
//         mov     %ax, %ss
//         mov     $0x7c00, %sp
//         movw    $irq0, 0x20           # vector 8 (IRQ0): ours
//         movw    %ax, 0x22
//         xor     %bx, %bx              # %bl: lines read
//         mov     $0x80000b40, %eax     # PIIX4 PM 00:01.3, PMBASE
//         call    pciread
//         cmp     $0xffff, %ax
//         jne     1f
//         mov     $0x8000f840, %eax     # ICH9 LPC 00:1f.0, PMBASE
//         call    pciread
// 1:      and     $0xffc0, %ax
//         mov     %ax, %bp              # PM1a_STS; +2 PM1a_EN; +4 PM1a_CNT
//         lea     2(%bp), %dx
//         mov     $0x0100, %ax          # PWRBTN_EN
//         out     %ax, %dx
// idle:   sti
//         hlt
//         cli
// rx:     mov     $0x3fd, %dx           # COM1 LSR: data ready?
//         in      %dx, %al
//         test    $1, %al
//         jz      power
//         mov     $0x3f8, %dx
//         in      %dx, %al
//         cmp     $'\n', %al
//         je      line
//         cmp     $'\r', %al
//         je      line
//         cmp     $'a', %al
//         jb      2f
//         cmp     $'z', %al
//         ja      2f
//         sub     $0x20, %al
// 2:      call    putc
//         jmp     rx
// line:   inc     %bl
//         cmp     $10, %bl
//         jb      3f
//         xor     %bl, %bl
// 3:      mov     $' ', %al             # then '#', '0' + %bl, '\r', '\n', each by putc
//         ...
//         jmp     rx
// power:  mov     %bp, %dx              # PWRBTN_STS?
//         in      %dx, %ax
//         test    $0x0100, %ax
//         jz      idle
//         lea     4(%bp), %dx
//         mov     $0x2000, %ax          # SLP_TYP 0 (S5), SLP_EN
//         out     %ax, %dx
//         jmp     idle
// putc:   push    %ax                   # waits for THR empty, writes %al to COM1
//         ...
// pciread: out %eax to 0xcf8, in %eax from 0xcfc
// irq0:   push %ax; mov $0x20, %al; out %al, $0x20; pop %ax; iret
//
// followed by zeros up to the boot signature 0x55 0xaa at offset 510.
#pragma once

#include <filesystem>
#include <fstream>

namespace banlieue::testing {

inline constexpr unsigned char kEchoGuestCode[] = {
    0xfa, 0x31, 0xc0, 0x8e, 0xd8, 0x8e, 0xd0, 0xbc, 0x00, 0x7c, 0xc7, 0x06, 0x20, 0x00, 0xaf, 0x7c,
    0xa3, 0x22, 0x00, 0x31, 0xdb, 0x66, 0xb8, 0x40, 0x0b, 0x00, 0x80, 0xe8, 0x86, 0x00, 0x83, 0xf8,
    0xff, 0x75, 0x09, 0x66, 0xb8, 0x40, 0xf8, 0x00, 0x80, 0xe8, 0x78, 0x00, 0x83, 0xe0, 0xc0, 0x89,
    0xc5, 0x8d, 0x56, 0x02, 0xb8, 0x00, 0x01, 0xef, 0xfb, 0xf4, 0xfa, 0xba, 0xfd, 0x03, 0xec, 0xa8,
    0x01, 0x74, 0x41, 0xba, 0xf8, 0x03, 0xec, 0x3c, 0x0a, 0x74, 0x13, 0x3c, 0x0d, 0x74, 0x0f, 0x3c,
    0x61, 0x72, 0x06, 0x3c, 0x7a, 0x77, 0x02, 0x2c, 0x20, 0xe8, 0x39, 0x00, 0xeb, 0xdd, 0xfe, 0xc3,
    0x80, 0xfb, 0x0a, 0x72, 0x02, 0x30, 0xdb, 0xb0, 0x20, 0xe8, 0x29, 0x00, 0xb0, 0x23, 0xe8, 0x24,
    0x00, 0x88, 0xd8, 0x04, 0x30, 0xe8, 0x1d, 0x00, 0xb0, 0x0d, 0xe8, 0x18, 0x00, 0xb0, 0x0a, 0xe8,
    0x13, 0x00, 0xeb, 0xb7, 0x89, 0xea, 0xed, 0xa9, 0x00, 0x01, 0x74, 0xac, 0x8d, 0x56, 0x04, 0xb8,
    0x00, 0x20, 0xef, 0xeb, 0xa3, 0x50, 0xba, 0xfd, 0x03, 0xec, 0xa8, 0x20, 0x74, 0xfb, 0x58, 0xba,
    0xf8, 0x03, 0xee, 0xc3, 0xba, 0xf8, 0x0c, 0x66, 0xef, 0xba, 0xfc, 0x0c, 0x66, 0xed, 0xc3, 0x50,
    0xb0, 0x20, 0xe6, 0x20, 0x58, 0xcf,
};

// Writes the guest as a raw disk image of `size_bytes` (at least 512) at `path`; false when
// it cannot.
inline bool writeEchoGuestDisk(const std::filesystem::path& path, std::size_t size_bytes) {
  std::string disk(size_bytes, '\0');
  if (size_bytes < 512) return false;
  disk.replace(0, sizeof kEchoGuestCode,
               std::string(reinterpret_cast<const char*>(kEchoGuestCode), sizeof kEchoGuestCode));
  disk[510] = static_cast<char>(0x55);
  disk[511] = static_cast<char>(0xaa);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(disk.data(), static_cast<std::streamsize>(disk.size()));
  return static_cast<bool>(out);
}

}  // namespace banlieue::testing
