# A shared library whose hand-written DWARF (version 4, a C++ unit) has reference cycles, for
# t_dwarf_cycle.sh: every function's code is real, and every path the analyzer takes from a
# function's DIE to its name meets a cycle.
#
#   cyc_nested  a function with no name of its own, whose abstract_origin is "f", declared
#               inside a subprogram whose abstract_origin is that same "f": naming f names its
#               enclosing function, which is named by f
#   cyc_self    abstract_origin is itself
#   cyc_spec    specification -> a declaration whose specification is cyc_spec's DIE
#   cyc_outer   named, with an inlined call whose abstract_origin -> a DIE whose
#               abstract_origin is the inlined call
#   cyc_chain   named by "g" declared in a subprogram named by the "g" declared in another,
#               5,000 deep: no cycle, but a name of 5,000 scopes

        .text
        .globl  cyc_nested, cyc_self, cyc_spec, cyc_outer, cyc_chain
        .type   cyc_nested, @function
        .type   cyc_self, @function
        .type   cyc_spec, @function
        .type   cyc_outer, @function
        .type   cyc_chain, @function
.Ltext:
cyc_nested:
        .fill   16, 1, 0x90
        ret
.Lnested_end:
        .size   cyc_nested, .-cyc_nested
cyc_self:
        .fill   16, 1, 0x90
        ret
.Lself_end:
        .size   cyc_self, .-cyc_self
cyc_spec:
        .fill   16, 1, 0x90
        ret
.Lspec_end:
        .size   cyc_spec, .-cyc_spec
cyc_outer:
        .fill   4, 1, 0x90
.Linl:
        .fill   8, 1, 0x90
.Linl_end:
        .fill   4, 1, 0x90
        ret
.Louter_end:
        .size   cyc_outer, .-cyc_outer
cyc_chain:
        .fill   16, 1, 0x90
        ret
.Lchain_end:
        .size   cyc_chain, .-cyc_chain
.Ltext_end:

        .section .debug_abbrev,"",@progbits
.Labbrev:
        .uleb128 1              # compile unit
        .uleb128 0x11           # DW_TAG_compile_unit
        .byte   1
        .uleb128 0x25, 0x08     # DW_AT_producer, DW_FORM_string
        .uleb128 0x13, 0x05     # DW_AT_language, DW_FORM_data2
        .uleb128 0x03, 0x08     # DW_AT_name, DW_FORM_string
        .uleb128 0x11, 0x01     # DW_AT_low_pc, DW_FORM_addr
        .uleb128 0x12, 0x07     # DW_AT_high_pc, DW_FORM_data8 (a length)
        .uleb128 0, 0
        .uleb128 2              # subprogram with code, named by abstract_origin
        .uleb128 0x2e
        .byte   0
        .uleb128 0x11, 0x01
        .uleb128 0x12, 0x07
        .uleb128 0x31, 0x13     # DW_AT_abstract_origin, DW_FORM_ref4
        .uleb128 0, 0
        .uleb128 3              # subprogram without code, named by abstract_origin, children
        .uleb128 0x2e
        .byte   1
        .uleb128 0x31, 0x13
        .uleb128 0, 0
        .uleb128 4              # subprogram with a name only
        .uleb128 0x2e
        .byte   0
        .uleb128 0x03, 0x08
        .uleb128 0, 0
        .uleb128 5              # subprogram with code, named by specification
        .uleb128 0x2e
        .byte   0
        .uleb128 0x11, 0x01
        .uleb128 0x12, 0x07
        .uleb128 0x47, 0x13     # DW_AT_specification, DW_FORM_ref4
        .uleb128 0, 0
        .uleb128 6              # declaration named by specification
        .uleb128 0x2e
        .byte   0
        .uleb128 0x47, 0x13
        .uleb128 0, 0
        .uleb128 7              # named subprogram with code, children
        .uleb128 0x2e
        .byte   1
        .uleb128 0x03, 0x08
        .uleb128 0x11, 0x01
        .uleb128 0x12, 0x07
        .uleb128 0, 0
        .uleb128 8              # inlined call, named by abstract_origin
        .uleb128 0x1d           # DW_TAG_inlined_subroutine
        .byte   0
        .uleb128 0x11, 0x01
        .uleb128 0x12, 0x07
        .uleb128 0x31, 0x13
        .uleb128 0x58, 0x0b     # DW_AT_call_file, DW_FORM_data1
        .uleb128 0x59, 0x0b     # DW_AT_call_line, DW_FORM_data1
        .uleb128 0, 0
        .uleb128 9              # abstract instance named by abstract_origin
        .uleb128 0x2e
        .byte   0
        .uleb128 0x31, 0x13
        .uleb128 0, 0
        .uleb128 0

        .section .debug_info,"",@progbits
.Lcu:
        .long   .Lcu_end - .Lcu_version
.Lcu_version:
        .value  4
        .long   .Labbrev
        .byte   8
        .uleb128 1
        .string "hand-written"
        .value  0x4             # DW_LANG_C_plus_plus
        .string "dwarf_cycle.s"
        .quad   .Ltext
        .quad   .Ltext_end - .Ltext

.Lnested:
        .uleb128 2
        .quad   cyc_nested
        .quad   .Lnested_end - cyc_nested
        .long   .Lf - .Lcu
.Lholder:
        .uleb128 3
        .long   .Lf - .Lcu
.Lf:
        .uleb128 4
        .string "f"
        .byte   0               # end of .Lholder's children

.Lself:
        .uleb128 2
        .quad   cyc_self
        .quad   .Lself_end - cyc_self
        .long   .Lself - .Lcu

.Lspec:
        .uleb128 5
        .quad   cyc_spec
        .quad   .Lspec_end - cyc_spec
        .long   .Lspec_decl - .Lcu
.Lspec_decl:
        .uleb128 6
        .long   .Lspec - .Lcu

        .uleb128 7
        .string "cyc_outer"
        .quad   cyc_outer
        .quad   .Louter_end - cyc_outer
.Linlined:
        .uleb128 8
        .quad   .Linl
        .quad   .Linl_end - .Linl
        .long   .Labstract - .Lcu
        .byte   1
        .byte   7
        .byte   0               # end of cyc_outer's children
.Labstract:
        .uleb128 9
        .long   .Linlined - .Lcu

        # cyc_chain: each block is a subprogram (abbrev 3, 9 bytes with its child) whose
        # child "g" (5 bytes in) names the function of the block before it, and whose
        # abstract_origin is the "g" of the block after it; the last one's is a "g" of its own
.Lchain:
        .uleb128 2
        .quad   cyc_chain
        .quad   .Lchain_end - cyc_chain
        .long   .Lchain_blocks + 5 - .Lcu
.Lchain_blocks:
        .rept   5000
        .uleb128 3
        .long   . + 13 - .Lcu
        .uleb128 4
        .string "g"
        .byte   0
        .endr
        .uleb128 3
        .long   .Lchain_end_decl - .Lcu
        .uleb128 4
        .string "g"
        .byte   0
.Lchain_end_decl:
        .uleb128 4
        .string "g"

        .byte   0               # end of the unit's children
.Lcu_end:

        .section .debug_aranges,"",@progbits
        .long   .Laranges_end - .Laranges_version
.Laranges_version:
        .value  2
        .long   .Lcu
        .byte   8
        .byte   0
        .long   0               # pad to twice the address size
        .quad   .Ltext
        .quad   .Ltext_end - .Ltext
        .quad   0
        .quad   0
.Laranges_end:

        .section .note.GNU-stack,"",@progbits
