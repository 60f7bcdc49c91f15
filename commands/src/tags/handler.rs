//! How the workers run tag commands: a tag's name is its own in the organization; applying tags checks
//! every resource and tag, then appends one event per tag in one statement (all or nothing).

use crate::aggregate::Rejection;
use crate::engine::{ExecuteError, NoFollowUps, WithId, append_together, load, name_taken, reject_fields};
use crate::handler::{Batching, Commit, handler};
use crate::reply::CommandReply;
use crate::tags::{ApplyTags, Tag, TagCommand, Taggable};
use crate::validate::FieldError;
use events::store::{AppendRequest, StreamRef};
use events::{EventPayload, Metadata};
use sqlx::PgConnection;
use uuid::Uuid;

impl WithId for Tag {
    type FollowUps = NoFollowUps;

    fn with_id(self, id: Uuid) -> Self {
        Tag { id, ..self }
    }
}

handler! {
    impl Handler for Tag {
        type Command = TagCommand;
        COMMIT: Commit::Grouped,
        BATCHING: Batching::Shared,
        TOGETHER: None,
        JOBS: &[];

        stream_id(command) {
            command.id()
        }

        check_references(command, conn, org_id) {
            let Some(name) = command.new_name() else { return Ok(()) };
            let mut errors = Vec::new();
            if name_taken(conn.get().await?, org_id, "tag", &["TagCreated", "TagChanged"], name, command.id()).await? {
                errors.push(FieldError::new("name", "already_exists", "another tag has this name"));
            }
            reject_fields(errors)
        }

        run_aggregate(command, creation = command.is_creation());
    }
}

/// Applying and removing tags on resources: one command over many tag streams.
pub struct TagApplications;

handler! {
    impl Handler for TagApplications {
        type Command = ApplyTags;
        COMMIT: Commit::OwnTransaction,
        BATCHING: Batching::Alone,
        TOGETHER: None,
        JOBS: &[];

        stream_id(command) {
            command.id
        }

        /// Every resource and tag is checked while running, so all offending ones are named together.
        check_references in run;

        run_on(command, conn, org_id, metadata) {
            run_apply_tags(conn, org_id, command, metadata).await
        }
    }
}

/// Applies and removes tags on resources of one kind: every resource and tag must be the
/// organization's (tags being added must not be archived); one event per tag, appended together.
async fn run_apply_tags(
    conn: &mut PgConnection,
    org_id: Uuid,
    apply: &ApplyTags,
    metadata: &Metadata,
) -> Result<CommandReply, ExecuteError> {
    let found: Vec<Uuid> = match apply.resource_type {
        Taggable::Product => {
            sqlx::query_scalar("select variant_id from product_variants where org_id = $1 and variant_id = any($2)")
                .bind(org_id)
                .bind(&apply.resource_ids)
                .fetch_all(&mut *conn)
                .await?
        }
        Taggable::Customer
        | Taggable::Supplier
        | Taggable::StockTransfer
        | Taggable::Purchase
        | Taggable::PurchaseOrder
        | Taggable::Sale => {
            sqlx::query_scalar(
                "select stream_id from events where org_id = $1 and stream_type = $2 and stream_id = any($3)
                   and version = 1",
            )
            .bind(org_id)
            .bind(apply.resource_type.as_str())
            .bind(&apply.resource_ids)
            .fetch_all(&mut *conn)
            .await?
        }
    };
    let mut errors: Vec<FieldError> = apply
        .resource_ids
        .iter()
        .enumerate()
        .filter(|(_, id)| !found.contains(id))
        .map(|(i, _)| {
            FieldError::new(
                format!("ids[{i}]"),
                "not_found",
                format!("no {} of this organization has this id", apply.resource_type.as_str()),
            )
        })
        .collect();
    let mut requests = Vec::new();
    for (list, adding) in [(&apply.add, true), (&apply.remove, false)] {
        let name = if adding { "add" } else { "remove" };
        for (i, tag_id) in list.iter().enumerate() {
            let (state, version) = load::<Tag>(conn, org_id, *tag_id).await?;
            match state {
                None => errors.push(FieldError::new(
                    format!("{name}[{i}]"),
                    "not_found",
                    "no tag of this organization has this id",
                )),
                Some(tag) if adding && tag.archived_at.is_some() => errors.push(FieldError::new(
                    format!("{name}[{i}]"),
                    "archived",
                    "an archived tag cannot be applied",
                )),
                Some(_) => {
                    let targets = events::catalogue::TagTargets {
                        resource_type: apply.resource_type.as_str().to_owned(),
                        resource_ids: apply.resource_ids.clone(),
                    };
                    let event = if adding {
                        events::catalogue::TagEvent::TagApplied(targets)
                    } else {
                        events::catalogue::TagEvent::TagRemoved(targets)
                    };
                    let stream = StreamRef {
                        org_id,
                        stream_type: events::catalogue::TagEvent::STREAM_TYPE,
                        stream_id: *tag_id,
                        expected_version: version,
                    };
                    requests.push(AppendRequest {
                        stream,
                        events: vec![event.to_new_event()?],
                        metadata: metadata.clone(),
                    });
                }
            }
        }
    }
    if !errors.is_empty() {
        return Err(Rejection::Invalid { errors }.into());
    }
    let commit = append_together(conn, &requests, apply.id).await?;
    let state = serde_json::json!({
        "object": "tag_application",
        "resource_type": apply.resource_type,
        "ids": apply.resource_ids,
        "added": apply.add,
        "removed": apply.remove,
    });
    Ok(CommandReply::accepted(commit, false, &state, Vec::new())?)
}

/// The products `tag_id` is applied to now, folded from the tag's own events.
pub(crate) async fn tagged_products(
    conn: &mut PgConnection,
    org_id: Uuid,
    tag_id: Uuid,
) -> Result<Vec<Uuid>, ExecuteError> {
    let applications: Vec<(String, serde_json::Value)> = sqlx::query_as(
        "select event_type, data->'resource_ids' from events
         where org_id = $1 and stream_type = 'tag' and stream_id = $2
           and event_type in ('TagApplied', 'TagRemoved') and data->>'resource_type' = 'product'
         order by version",
    )
    .bind(org_id)
    .bind(tag_id)
    .fetch_all(&mut *conn)
    .await?;
    let mut tagged = std::collections::BTreeSet::new();
    for (event_type, ids) in applications {
        let ids: Vec<Uuid> = serde_json::from_value(ids).map_err(|e| ExecuteError::Corrupt(org_id, e.to_string()))?;
        if event_type == "TagApplied" {
            tagged.extend(ids);
        } else {
            for id in ids {
                tagged.remove(&id);
            }
        }
    }
    Ok(tagged.into_iter().collect())
}
