//! Lenient typed values of ACP messages. The schema crate's enums reject a
//! value they do not know, and real agents send such values (new kinds, a
//! status from a newer protocol). Here every enum keeps the unknown text in
//! `Unknown(String)`: a malformed field degrades that field, never the
//! message. Serialized as the protocol's own strings.

macro_rules! lenient_enum {
    ($(#[$meta:meta])* $name:ident { $($(#[$vmeta:meta])* $variant:ident => $text:literal),* $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash)]
        pub enum $name {
            $($(#[$vmeta])* $variant,)*
            /// A value this client does not know, as the agent sent it.
            Unknown(String),
        }

        impl $name {
            pub fn parse(text: &str) -> Self {
                match text {
                    $($text => Self::$variant,)*
                    other => Self::Unknown(other.to_owned()),
                }
            }

            /// The protocol's string (an unknown value as it was sent).
            pub fn as_str(&self) -> &str {
                match self {
                    $(Self::$variant => $text,)*
                    Self::Unknown(text) => text,
                }
            }
        }

        impl From<&str> for $name {
            fn from(text: &str) -> Self {
                Self::parse(text)
            }
        }

        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.as_str() == *other
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                String::deserialize(d).map(|s| Self::parse(&s))
            }
        }
    };
}

lenient_enum!(
    /// `ToolKind`: what a tool call does (drives the card's label, the
    /// quickfix text and the user's auto-allow policy).
    ToolKind {
        Read => "read",
        Edit => "edit",
        Delete => "delete",
        Move => "move",
        Search => "search",
        Execute => "execute",
        Think => "think",
        Fetch => "fetch",
        SwitchMode => "switch_mode",
        Other => "other",
    }
);

impl ToolKind {
    /// The kind a card shows: the protocol says unknown kinds are `other`.
    pub fn known_or_other(text: &str) -> Self {
        match Self::parse(text) {
            Self::Unknown(_) => Self::Other,
            kind => kind,
        }
    }
}

lenient_enum!(
    /// `ToolCallStatus`.
    ToolStatus {
        Pending => "pending",
        InProgress => "in_progress",
        Completed => "completed",
        Failed => "failed",
    }
);

impl ToolStatus {
    /// Still pending or running (a cancel ends it).
    pub fn is_open(&self) -> bool {
        matches!(self, Self::Pending | Self::InProgress)
    }

    pub fn is_finished(&self) -> bool {
        matches!(self, Self::Completed | Self::Failed)
    }
}

lenient_enum!(
    /// `PermissionOptionKind`.
    PermissionOptionKind {
        AllowOnce => "allow_once",
        AllowAlways => "allow_always",
        RejectOnce => "reject_once",
        RejectAlways => "reject_always",
    }
);

impl PermissionOptionKind {
    pub fn is_reject(&self) -> bool {
        matches!(self, Self::RejectOnce | Self::RejectAlways)
    }

    pub fn is_always(&self) -> bool {
        matches!(self, Self::AllowAlways | Self::RejectAlways)
    }
}

lenient_enum!(
    /// `PlanEntryStatus`.
    PlanStatus {
        Pending => "pending",
        InProgress => "in_progress",
        Completed => "completed",
    }
);

lenient_enum!(
    /// `PlanEntryPriority`.
    PlanPriority {
        High => "high",
        Medium => "medium",
        Low => "low",
    }
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_values_parse_and_unknown_ones_are_kept() {
        assert_eq!(ToolKind::parse("execute"), ToolKind::Execute);
        assert_eq!(
            ToolKind::parse("teleport"),
            ToolKind::Unknown("teleport".into())
        );
        assert_eq!(ToolKind::known_or_other("teleport"), ToolKind::Other);
        assert_eq!(ToolStatus::parse("in_progress").as_str(), "in_progress");
        assert!(ToolStatus::parse("pending").is_open());
        assert!(!ToolStatus::parse("waiting").is_open());
        assert_eq!(ToolStatus::parse("waiting").as_str(), "waiting");
        assert!(PermissionOptionKind::parse("reject_always").is_reject());
        assert!(PermissionOptionKind::parse("allow_always").is_always());
        assert!(!PermissionOptionKind::parse("allow").is_always());
        assert_eq!(PlanPriority::parse("urgent").to_string(), "urgent");
    }

    #[test]
    fn serde_uses_the_protocol_strings() {
        let v =
            serde_json::to_value([ToolStatus::Completed, ToolStatus::Unknown("x".into())]).unwrap();
        assert_eq!(v, serde_json::json!(["completed", "x"]));
        let k: PlanStatus = serde_json::from_value(serde_json::json!("in_progress")).unwrap();
        assert_eq!(k, PlanStatus::InProgress);
    }
}
