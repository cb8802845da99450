#!/usr/bin/env python3
"""Copies a GGUF file with metadata keys set or removed and tensors removed, for tests of how
the converter treats files it must refuse (or accept) that no model generator writes.

  edit_gguf.py IN.gguf OUT.gguf [--set KEY=TYPE:VALUE ...] [--drop-key KEY ...]
                                [--drop-tensor NAME ...]

TYPE is str, u32, i32, f32 or bool. Everything else is copied as stored.
"""
import argparse

import gguf

TYPES = {"str": (gguf.GGUFValueType.STRING, str), "u32": (gguf.GGUFValueType.UINT32, int),
         "i32": (gguf.GGUFValueType.INT32, int), "f32": (gguf.GGUFValueType.FLOAT32, float),
         "bool": (gguf.GGUFValueType.BOOL, lambda v: v == "true")}


def copy_field(writer, field):
    vtype = field.types[0]
    if vtype == gguf.GGUFValueType.ARRAY:
        sub = field.types[-1]
        value = ([bytes(field.parts[i]) for i in field.data] if sub == gguf.GGUFValueType.STRING
                 else field.contents())
        writer.add_key_value(field.name, value, vtype, sub_type=sub)
    elif vtype == gguf.GGUFValueType.STRING:
        writer.add_key_value(field.name, bytes(field.parts[-1]), vtype)
    else:
        writer.add_key_value(field.name, field.contents(), vtype)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("src")
    ap.add_argument("dst")
    ap.add_argument("--set", action="append", default=[])
    ap.add_argument("--drop-key", action="append", default=[])
    ap.add_argument("--drop-tensor", action="append", default=[])
    args = ap.parse_args()
    sets = {}
    for item in args.set:
        key, typed = item.split("=", 1)
        type_name, value = typed.split(":", 1)
        vtype, cast = TYPES[type_name]
        sets[key] = (vtype, cast(value))
    reader = gguf.GGUFReader(args.src)
    arch = sets.pop("general.architecture", (None, reader.fields["general.architecture"].contents()))[1]
    writer = gguf.GGUFWriter(args.dst, arch)
    for name, field in reader.fields.items():
        if name.startswith("GGUF.") or name == "general.architecture" or name in args.drop_key:
            continue
        if name == "general.alignment":
            writer.data_alignment = field.contents()
        if name in sets:
            vtype, value = sets.pop(name)
            writer.add_key_value(name, value, vtype)
        else:
            copy_field(writer, field)
    for name, (vtype, value) in sets.items():
        writer.add_key_value(name, value, vtype)
    for t in reader.tensors:
        if t.name in args.drop_tensor:
            continue
        # Block-quantized data comes as rows of bytes, which add_tensor reads back into the
        # element shape when given the type; float data carries its own dtype and shape.
        quantized = t.tensor_type not in (gguf.GGMLQuantizationType.F32,
                                          gguf.GGMLQuantizationType.F16)
        writer.add_tensor(t.name, t.data, raw_dtype=t.tensor_type if quantized else None)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


if __name__ == "__main__":
    main()
