"""The canonical message contracts: JSON Schema files in schemas/ are the one source of truth.

Spark schemas, required-field checks, enum, range, length and pattern rules, and cross-field
rules are all derived from them here, so a field added to a schema file flows to parsing and
validation.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from typing import Any

from pyspark.sql import types as T

from gridlake.settings import SCHEMAS_DIR


@dataclass(frozen=True)
class FieldSpec:
    name: str
    json_type: str  # string | integer | number | array | object
    nullable: bool
    fmt: str | None
    enum: tuple[Any, ...] | None
    minimum: float | None
    maximum: float | None
    description: str
    items: dict[str, Any] | None
    min_length: int | None = None  # strings: JSON Schema minLength, maxLength, pattern
    max_length: int | None = None
    pattern: str | None = None


@dataclass(frozen=True)
class Contract:
    name: str  # jobs | nodes | network | deadletter
    topic: str
    key: str
    title: str
    description: str
    fields: tuple[FieldSpec, ...]
    required: tuple[str, ...]
    rules: tuple[dict[str, str], ...]

    def field(self, name: str) -> FieldSpec:
        for spec in self.fields:
            if spec.name == name:
                return spec
        raise KeyError(name)

    def spark_schema(self, *, all_strings: bool = False) -> T.StructType:
        """Spark schema of the message; with all_strings every scalar is read as text."""
        return T.StructType(
            [T.StructField(f.name, _spark_type(f, all_strings), True) for f in self.fields]
        )


def _split_type(prop: dict[str, Any]) -> tuple[str, bool]:
    t = prop.get("type", "string")
    if isinstance(t, list):
        non_null = [x for x in t if x != "null"]
        return non_null[0], "null" in t
    return t, False


def _scalar_type(json_type: str, fmt: str | None) -> T.DataType:
    if json_type == "integer":
        return T.LongType()
    if json_type == "number":
        return T.DoubleType()
    if json_type == "boolean":
        return T.BooleanType()
    if json_type == "string" and fmt == "date-time":
        return T.StringType()  # parsed and checked explicitly (RFC 3339) by the silver layer
    return T.StringType()


def _spark_type(spec: FieldSpec, all_strings: bool) -> T.DataType:
    if spec.json_type == "array" and spec.items is not None:
        item_fields = []
        for name, prop in spec.items.get("properties", {}).items():
            jt, _ = _split_type(prop)
            item_type = T.StringType() if all_strings else _scalar_type(jt, prop.get("format"))
            item_fields.append(T.StructField(name, item_type, True))
        return T.ArrayType(T.StructType(item_fields), True)
    if all_strings:
        return T.StringType()
    return _scalar_type(spec.json_type, spec.fmt)


def _load(name: str) -> Contract:
    path = SCHEMAS_DIR / f"grid.{name}.schema.json"
    doc = json.loads(path.read_text())
    fields = []
    for fname, prop in doc["properties"].items():
        json_type, nullable = _split_type(prop)
        enum = prop.get("enum")
        fields.append(
            FieldSpec(
                name=fname,
                json_type=json_type,
                nullable=nullable,
                fmt=prop.get("format"),
                enum=tuple(v for v in enum if v is not None) if enum else None,
                minimum=prop.get("minimum"),
                maximum=prop.get("maximum"),
                description=prop.get("description", ""),
                items=prop.get("items"),
                min_length=prop.get("minLength"),
                max_length=prop.get("maxLength"),
                pattern=prop.get("pattern"),
            )
        )
    return Contract(
        name=name,
        topic=doc["x-kafka-topic"],
        key=doc.get("x-key", ""),
        title=doc.get("title", ""),
        description=doc.get("description", ""),
        fields=tuple(fields),
        required=tuple(doc.get("required", [])),
        rules=tuple(doc.get("x-rules", [])),
    )


@cache
def contract(name: str) -> Contract:
    """The contract of one input: ``jobs``, ``nodes``, ``network`` or ``deadletter``."""
    return _load(name)
